/**
 * Whether a Prometheus picked up a ServiceMonitor, PodMonitor or PrometheusRule, in that object's own
 * status (`status.bindings`, one `Accepted` condition per selecting Prometheus, upstream's shape) and
 * in `kubectl get`; the Prometheus counts what it selected and accepted.
 */
import {
  PatchStrategy,
  setHeaderOptions,
  type CustomObjectsApi,
  type KubeConfig,
} from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import type { Binding } from '../../../src/handlers/prometheus/acceptance.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { uniqueNamespace } from '../../support/cluster.js';
import { kubectl } from '../../support/kubectl.js';
import { writesQuiet } from '../../support/operators.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';

type Plural = 'servicemonitors' | 'podmonitors' | 'prometheusrules' | 'prometheuses';
interface Stored {
  metadata: { generation?: number; labels?: Record<string, string> };
  status?: {
    bindings?: Binding[];
    serviceMonitors?: unknown;
    podMonitors?: unknown;
    prometheusRules?: unknown;
  };
}

let kc: KubeConfig;
let custom: CustomObjectsApi;
let running: TestOperator;

beforeAll(async () => {
  ({ kc, custom } = await monitoringPlane());
  running = await runOperator({ kubeConfig: kc, handlers: [PrometheusOperator] });
});
afterAll(async () => {
  await running?.stop();
});

const KINDS: Record<Plural, string> = {
  servicemonitors: 'ServiceMonitor',
  podmonitors: 'PodMonitor',
  prometheusrules: 'PrometheusRule',
  prometheuses: 'Prometheus',
};

async function create(
  plural: Plural,
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
  labels: Record<string, string> = {},
): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...group,
    plural,
    namespace,
    body: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: KINDS[plural],
      metadata: { name, labels },
      spec,
    },
  });
}

async function read(plural: Plural, namespace: string, name: string): Promise<Stored> {
  return (await custom.getNamespacedCustomObject({ ...group, plural, namespace, name })) as Stored;
}

async function mergePatch(
  plural: Plural,
  namespace: string,
  name: string,
  body: Record<string, unknown>,
): Promise<void> {
  await custom.patchNamespacedCustomObject(
    { ...group, plural, namespace, name, body },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** The `Accepted` condition of the binding `prometheus` put on an object, once it matches `want`. */
async function acceptedBy(
  plural: Plural,
  namespace: string,
  name: string,
  prometheus: string,
  want: { status: string; generation?: number },
) {
  return waitFor(
    async () => {
      const object = await read(plural, namespace, name);
      const condition = object.status?.bindings
        ?.find((b) => b.name === prometheus)
        ?.conditions.find((c) => c.type === 'Accepted');
      const observed =
        want.generation === undefined || condition?.observedGeneration === want.generation;
      return condition?.status === want.status && observed ? condition : undefined;
    },
    {
      what: `${KINDS[plural]} ${namespace}/${name} to say Accepted=${want.status} for Prometheus ${prometheus}`,
    },
  );
}

const endpoint = { port: 'metrics' };

describe('monitor acceptance in status', () => {
  test('a ServiceMonitor the Prometheus selects says Accepted, and kubectl get shows it', async () => {
    const namespace = await uniqueNamespace(kc, 'accept-sm');
    await create('prometheuses', namespace, 'main', { serviceMonitorSelector: {} });
    const started = Date.now();
    await create('servicemonitors', namespace, 'web', { selector: {}, endpoints: [endpoint] });
    const condition = await acceptedBy('servicemonitors', namespace, 'web', 'main', {
      status: 'True',
      generation: 1,
    });
    console.log(
      `ServiceMonitor created -> Accepted=True in its status: ${Date.now() - started} ms`,
    );
    expect(condition).toMatchObject({
      reason: 'Accepted',
      message: `in the configuration of Prometheus ${namespace}/main`,
    });
    expect((await read('servicemonitors', namespace, 'web')).status?.bindings).toEqual([
      expect.objectContaining({
        group: 'monitoring.coreos.com',
        resource: 'prometheuses',
        namespace,
        name: 'main',
      }),
    ]);
    const table = await kubectl(['get', 'servicemonitors', '-n', namespace, '-o', 'wide']);
    expect(table.stdout).toMatch(/^NAME\s+ACCEPTED\s+PROMETHEUS\s+PORT\s+AGE$/m);
    expect(table.stdout).toMatch(/^web\s+True\s+main\s+metrics\s+/m);
  });

  test('a monitor the Prometheus skips says why, and says Accepted once it is fixed', async () => {
    const namespace = await uniqueNamespace(kc, 'accept-fix');
    await create('prometheuses', namespace, 'main', { serviceMonitorSelector: {} });
    // No interval: the Prometheus's 30s applies, and a 1m timeout is longer, so the render skips it.
    await create('servicemonitors', namespace, 'slow', {
      selector: {},
      endpoints: [{ ...endpoint, scrapeTimeout: '1m' }],
    });
    const refused = await acceptedBy('servicemonitors', namespace, 'slow', 'main', {
      status: 'False',
      generation: 1,
    });
    expect(refused).toMatchObject({ reason: 'InvalidConfiguration' });
    expect(refused?.message).toContain('scrapeTimeout');
    const table = await kubectl(['get', 'servicemonitors', '-n', namespace]);
    expect(table.stdout).toMatch(/^slow\s+False\s+/m);

    const fixed = Date.now();
    await mergePatch('servicemonitors', namespace, 'slow', { spec: { endpoints: [endpoint] } });
    const accepted = await acceptedBy('servicemonitors', namespace, 'slow', 'main', {
      status: 'True',
      generation: 2,
    });
    console.log(`ServiceMonitor fixed -> Accepted=True in its status: ${Date.now() - fixed} ms`);
    expect(Date.parse(accepted?.lastTransitionTime ?? '')).toBeGreaterThan(
      Date.parse(refused?.lastTransitionTime ?? '') - 1,
    );
  });

  test('a PodMonitor and a PrometheusRule say the same, and the Prometheus counts what it selected and accepted', async () => {
    const namespace = await uniqueNamespace(kc, 'accept-pm');
    await create('prometheuses', namespace, 'main', {
      serviceMonitorSelector: {},
      podMonitorSelector: {},
      ruleSelector: {},
    });
    await create('podmonitors', namespace, 'pods', {
      selector: {},
      podMetricsEndpoints: [endpoint],
    });
    await create('prometheusrules', namespace, 'good', {
      groups: [{ name: 'ok', rules: [{ record: 'job:up:sum', expr: 'sum by (job) (up)' }] }],
    });
    // A rule with neither `record` nor `alert`: Prometheus would refuse the group; the other still loads.
    await create('prometheusrules', namespace, 'mixed', {
      groups: [
        { name: 'ok', rules: [{ alert: 'Down', expr: 'up == 0' }] },
        { name: 'broken-group', rules: [{ expr: 'up' }] },
      ],
    });

    await acceptedBy('podmonitors', namespace, 'pods', 'main', { status: 'True' });
    await acceptedBy('prometheusrules', namespace, 'good', 'main', { status: 'True' });
    const mixed = await acceptedBy('prometheusrules', namespace, 'mixed', 'main', {
      status: 'False',
    });
    expect(mixed).toMatchObject({ reason: 'InvalidRuleGroup' });
    expect(mixed?.message).toContain('"broken-group"');
    expect(mixed?.message).toContain('its other groups still load');
    const counts = await waitFor(
      async () => {
        const status = (await read('prometheuses', namespace, 'main')).status;
        return (status?.prometheusRules as { selected?: number } | undefined)?.selected === 2
          ? status
          : undefined;
      },
      { what: 'the Prometheus to count its two PrometheusRules' },
    );
    expect(counts).toMatchObject({
      serviceMonitors: { selected: 0, accepted: 0 },
      podMonitors: { selected: 1, accepted: 1 },
      prometheusRules: { selected: 2, accepted: 1 },
    });
  });

  test("a monitor two Prometheuses select carries both bindings, and loses one's when it stops selecting it", async () => {
    const namespace = await uniqueNamespace(kc, 'accept-two');
    await create('prometheuses', namespace, 'team', {
      serviceMonitorSelector: { matchLabels: { team: 'a' } },
    });
    await create('prometheuses', namespace, 'all', { serviceMonitorSelector: {} });
    await create(
      'servicemonitors',
      namespace,
      'web',
      { selector: {}, endpoints: [endpoint] },
      { team: 'a' },
    );
    await acceptedBy('servicemonitors', namespace, 'web', 'team', { status: 'True' });
    await acceptedBy('servicemonitors', namespace, 'web', 'all', { status: 'True' });

    await mergePatch('servicemonitors', namespace, 'web', { metadata: { labels: { team: null } } });
    const bindings = await waitFor(
      async () => {
        const found = (await read('servicemonitors', namespace, 'web')).status?.bindings ?? [];
        return found.length === 1 ? found : undefined;
      },
      { what: "the team Prometheus's binding to come off the monitor it no longer selects" },
    );
    expect(bindings?.map((binding) => binding.name)).toEqual(['all']);
  });

  test('deleting a Prometheus takes its binding off every object it selected', async () => {
    const namespace = await uniqueNamespace(kc, 'accept-del');
    await create('prometheuses', namespace, 'main', {
      serviceMonitorSelector: {},
      ruleSelector: {},
    });
    await create('servicemonitors', namespace, 'web', { selector: {}, endpoints: [endpoint] });
    await create('prometheusrules', namespace, 'rules', {
      groups: [{ name: 'ok', rules: [{ record: 'job:up:sum', expr: 'sum by (job) (up)' }] }],
    });
    await acceptedBy('servicemonitors', namespace, 'web', 'main', { status: 'True' });
    await acceptedBy('prometheusrules', namespace, 'rules', 'main', { status: 'True' });

    await custom.deleteNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      name: 'main',
    });
    for (const [plural, name] of [
      ['servicemonitors', 'web'],
      ['prometheusrules', 'rules'],
    ] as const) {
      await waitFor(
        async () => ((await read(plural, namespace, name)).status?.bindings ?? []).length === 0,
        { what: `${plural} ${name} to have no binding` },
      );
    }
  });

  test('an unchanged verdict is never written again, however many renders follow', async () => {
    const namespace = await uniqueNamespace(kc, 'accept-quiet');
    await create('prometheuses', namespace, 'main', { serviceMonitorSelector: {} });
    const settled = ['a', 'b', 'c'];
    for (const name of settled)
      await create('servicemonitors', namespace, name, { selector: {}, endpoints: [endpoint] });
    for (const name of settled)
      await acceptedBy('servicemonitors', namespace, name, 'main', { status: 'True' });
    await writesQuiet(running.requests);
    const mark = running.requests.length;

    // Each new monitor re-renders the Prometheus; its own status is written, the settled ones' never.
    for (let i = 0; i < 5; i++) {
      await create('servicemonitors', namespace, `new-${i}`, {
        selector: {},
        endpoints: [endpoint],
      });
      await acceptedBy('servicemonitors', namespace, `new-${i}`, 'main', { status: 'True' });
    }
    await writesQuiet(running.requests);
    const statusWrites = running.requests
      .slice(mark)
      .filter(
        (r) =>
          r.method === 'PATCH' &&
          r.path.startsWith(
            `/apis/monitoring.coreos.com/v1/namespaces/${namespace}/servicemonitors/`,
          ) &&
          r.path.endsWith('/status'),
      )
      .map((r) => r.path.split('/').at(-2));
    console.log(
      `status writes to ServiceMonitors over 5 renders: ${statusWrites.length} (${statusWrites.join(', ')})`,
    );
    expect(statusWrites.filter((name) => settled.includes(name ?? ''))).toEqual([]);
    expect([...statusWrites].sort()).toEqual(['new-0', 'new-1', 'new-2', 'new-3', 'new-4']);
  });
});
