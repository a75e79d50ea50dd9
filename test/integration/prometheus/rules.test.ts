/**
 * PrometheusRules on the test control plane: the rules a Prometheus selects end up in its rule
 * ConfigMap, mounted by its StatefulSet and named by its configuration; an invalid group is left
 * out with one Event naming it, and never keeps the other rules out.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import type {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  V1ConfigMap,
} from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';

const CONFIGMAP = 'prometheus-main-rulefiles-0';

let kc: KubeConfig;
let running: TestOperator;
let custom: CustomObjectsApi;
let core: CoreV1Api;
let apps: AppsV1Api;

beforeAll(async () => {
  ({ kc, custom, core, apps } = await monitoringPlane());
  running = await runOperator({ kubeConfig: kc, handlers: [PrometheusOperator] });
});
afterAll(async () => {
  await running?.stop();
});

function create(
  namespace: string,
  plural: string,
  kind: string,
  name: string,
  labels: Record<string, string>,
  spec: Record<string, unknown>,
): Promise<unknown> {
  return custom.createNamespacedCustomObject({
    ...group,
    plural,
    namespace,
    body: { apiVersion: 'monitoring.coreos.com/v1', kind, metadata: { name, labels }, spec },
  });
}

async function ruleConfigMap(namespace: string): Promise<V1ConfigMap | undefined> {
  return core.readNamespacedConfigMap({ namespace, name: CONFIGMAP }).catch((error: unknown) => {
    if (statusOf(error) === 404) return undefined;
    throw error;
  });
}

/** The group names of each rule file in the ConfigMap, by PrometheusRule name (`<ns>-<name>-<uid>.yaml`). */
async function groupsByRule(namespace: string): Promise<Record<string, string[]>> {
  const data = (await ruleConfigMap(namespace))?.data ?? {};
  const out: Record<string, string[]> = {};
  for (const [key, text] of Object.entries(data)) {
    const name = key.slice(namespace.length + 1).replace(/-[0-9a-f-]{36}\.yaml$/, '');
    out[name] = ((yaml.load(text) as { groups: Array<{ name: string }> }).groups ?? []).map(
      (g) => g.name,
    );
  }
  return out;
}

async function invalidGroupEvents(namespace: string, rule: string): Promise<string[]> {
  const events = await core.listNamespacedEvent({
    namespace,
    fieldSelector: `involvedObject.name=${rule},involvedObject.kind=PrometheusRule`,
  });
  return events.items.filter((e) => e.reason === 'InvalidRuleGroup').map((e) => e.message ?? '');
}

function promtoolCheckRules(file: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile('promtool', ['check', 'rules', file], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error === null) resolve({ code: 0, output: `${stdout}${stderr}` });
      else if (typeof error.code === 'number')
        resolve({ code: error.code, output: `${stdout}${stderr}` });
      else
        reject(
          new Error(
            `promtool check rules failed to run (npm run provision installs it): ${error.message}`,
          ),
        );
    });
  });
}

const alerting = {
  name: 'availability',
  rules: [
    {
      alert: 'TargetDown',
      expr: 'up == 0',
      for: '5m',
      labels: { severity: 'page' },
      annotations: { summary: '{{ $labels.instance }} is down' },
    },
  ],
};
const recording = {
  name: 'throughput',
  rules: [
    { record: 'job:http_requests:rate5m', expr: 'sum by (job) (rate(http_requests_total[5m]))' },
  ],
};
// Neither record nor alert: Prometheus would refuse the whole file over it.
const broken = { name: 'broken-group', rules: [{ expr: 'up' }] };

describe('PrometheusRules selected by a Prometheus', () => {
  test('become a mounted, referenced rule file holding the valid groups; the invalid group gets exactly one Event naming it', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-rules');
    await create(
      namespace,
      'prometheusrules',
      'PrometheusRule',
      'valid',
      { role: 'alerts' },
      { groups: [alerting] },
    );
    await create(
      namespace,
      'prometheusrules',
      'PrometheusRule',
      'mixed',
      { role: 'alerts' },
      { groups: [recording, broken] },
    );
    await create(
      namespace,
      'prometheusrules',
      'PrometheusRule',
      'unselected',
      { role: 'other' },
      { groups: [alerting] },
    );
    await create(
      namespace,
      'prometheuses',
      'Prometheus',
      'main',
      {},
      { serviceMonitorSelector: {}, ruleSelector: { matchLabels: { role: 'alerts' } } },
    );

    await waitFor(
      async () =>
        JSON.stringify(await groupsByRule(namespace)) ===
        JSON.stringify({ mixed: ['throughput'], valid: ['availability'] }),
      {
        what: `the rule ConfigMap to hold valid's and mixed's valid groups (now ${JSON.stringify(await groupsByRule(namespace))})`,
      },
    );
    const configMap = (await ruleConfigMap(namespace)) as V1ConfigMap;
    expect(configMap.metadata?.ownerReferences?.map((o) => [o.kind, o.name])).toEqual([
      ['Prometheus', 'main'],
    ]);

    // Each file is one Prometheus loads.
    const dir = mkdtempSync(join(tmpdir(), 'konductor-rules-it-'));
    try {
      for (const [key, text] of Object.entries(configMap.data ?? {})) {
        writeFileSync(join(dir, key), text);
        const result = await promtoolCheckRules(join(dir, key));
        expect({ key, ...result }).toMatchObject({ key, code: 0 });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    const set = await waitFor(
      async () => {
        const found = await apps
          .readNamespacedStatefulSet({ namespace, name: 'prometheus-main' })
          .catch(() => undefined);
        return found?.spec?.template.spec?.volumes?.some((v) => v.configMap?.name === CONFIGMAP)
          ? found
          : undefined;
      },
      { what: 'the StatefulSet to mount the rule ConfigMap' },
    );
    const podSpec = set!.spec!.template.spec!;
    const volume = podSpec.volumes!.find((v) => v.configMap?.name === CONFIGMAP)!;
    const mount = podSpec.containers
      .find((c) => c.name === 'prometheus')!
      .volumeMounts!.find((m) => m.name === volume.name)!;
    expect(mount.mountPath).toBe(`/etc/prometheus/rules/${CONFIGMAP}`);

    const secret = await core.readNamespacedSecret({ namespace, name: 'prometheus-main' });
    const config = yaml.load(
      gunzipSync(Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64')).toString('utf8'),
    ) as { rule_files?: string[] };
    expect(config.rule_files).toEqual([`${mount.mountPath}/*.yaml`]);

    const events = await waitFor(
      async () => {
        const found = await invalidGroupEvents(namespace, 'mixed');
        return found.length > 0 ? found : undefined;
      },
      { what: 'the InvalidRuleGroup Event on mixed' },
    );
    expect(events).toHaveLength(1);
    expect(events?.[0]).toContain('rule group "broken-group" of PrometheusRule');
    expect(events?.[0]).toContain(`${namespace}/mixed`);
    expect(await invalidGroupEvents(namespace, 'valid')).toEqual([]);

    // Another rule re-renders everything; the unchanged invalid group is not reported again.
    await create(
      namespace,
      'prometheusrules',
      'PrometheusRule',
      'later',
      { role: 'alerts' },
      { groups: [{ ...recording, name: 'later' }] },
    );
    await waitFor(async () => (await groupsByRule(namespace)).later !== undefined, {
      what: 'later in the rule ConfigMap',
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // Events are posted in the background
    expect(await invalidGroupEvents(namespace, 'mixed')).toHaveLength(1);
  });

  test('a PrometheusRule deleted, or no longer selected, leaves the rule file', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-rules-gone');
    await create(
      namespace,
      'prometheusrules',
      'PrometheusRule',
      'first',
      { role: 'alerts' },
      { groups: [alerting] },
    );
    await create(
      namespace,
      'prometheusrules',
      'PrometheusRule',
      'second',
      { role: 'alerts' },
      { groups: [recording] },
    );
    await create(
      namespace,
      'prometheuses',
      'Prometheus',
      'main',
      {},
      { serviceMonitorSelector: {}, ruleSelector: { matchLabels: { role: 'alerts' } } },
    );
    await waitFor(
      async () =>
        Object.keys(await groupsByRule(namespace))
          .sort()
          .join() === 'first,second',
      { what: 'both rule files' },
    );

    await custom.deleteNamespacedCustomObject({
      ...group,
      plural: 'prometheusrules',
      namespace,
      name: 'first',
    });
    await custom.patchNamespacedCustomObject({
      ...group,
      plural: 'prometheusrules',
      namespace,
      name: 'second',
      body: [{ op: 'replace', path: '/metadata/labels/role', value: 'other' }],
    });
    await waitFor(async () => Object.keys(await groupsByRule(namespace)).length === 0, {
      what: `an empty rule ConfigMap (now ${JSON.stringify(await groupsByRule(namespace))})`,
    });
  });
});
