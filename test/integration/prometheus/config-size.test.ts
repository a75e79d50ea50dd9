/**
 * One Prometheus shared by tenants, and one tenant's ServiceMonitors large enough to push its
 * configuration Secret past the API server's 1 MiB: the oversized ones are left out with an Event
 * each, the other tenant's monitors still reach the configuration, and the status says what was
 * left out; a Secret write the API server refuses shows as `Reconciled=False`.
 */
import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import type { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { MAX_CONFIG_GZIP_BYTES } from '../../../src/handlers/prometheus/config-budget.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';

let kc: KubeConfig;
let custom: CustomObjectsApi;
let core: CoreV1Api;
let running: TestOperator;

beforeAll(async () => {
  ({ kc, custom, core } = await monitoringPlane());
  running = await runOperator({ kubeConfig: kc, handlers: [PrometheusOperator] });
});
afterAll(async () => {
  await running?.stop();
});

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/** Three namespaces: the shared Prometheus's, tenant A's and tenant B's; the Prometheus selects monitors labelled `tag` in all of them. */
async function sharedSetup(
  prefix: string,
): Promise<{ home: string; a: string; b: string; tag: string }> {
  const tag = `${prefix}-${Date.now().toString(36)}`;
  const home = await uniqueNamespace(kc, `${prefix}-home`);
  const a = await uniqueNamespace(kc, `${prefix}-a`);
  const b = await uniqueNamespace(kc, `${prefix}-b`);
  await custom.createNamespacedCustomObject({
    ...group,
    plural: 'prometheuses',
    namespace: home,
    body: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'Prometheus',
      metadata: { name: 'shared' },
      spec: {
        serviceMonitorSelector: { matchLabels: { tag } },
        serviceMonitorNamespaceSelector: {},
      },
    },
  });
  return { home, a, b, tag };
}

function monitor(
  namespace: string,
  name: string,
  tag: string,
  endpoint: Record<string, unknown> = {},
): Promise<unknown> {
  return custom.createNamespacedCustomObject({
    ...group,
    plural: 'servicemonitors',
    namespace,
    body: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name, labels: { tag } },
      spec: { selector: {}, endpoints: [{ port: 'metrics', ...endpoint }] },
    },
  });
}

/** `count` relabelings of about 1 KB of incompressible text each. */
function bulkyRelabelings(count: number): unknown[] {
  return Array.from({ length: count }, (_, i) => ({
    targetLabel: `l${i}`,
    replacement: randomBytes(750).toString('base64'),
  }));
}

async function configOf(namespace: string): Promise<{ jobs: string[]; gzipBytes: number }> {
  try {
    const secret = await core.readNamespacedSecret({ namespace, name: 'prometheus-shared' });
    const zipped = Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64');
    const config = yaml.load(gunzipSync(zipped).toString('utf8')) as {
      scrape_configs?: Array<{ job_name: string }>;
    };
    return {
      jobs: (config.scrape_configs ?? []).map((job) => job.job_name),
      gzipBytes: zipped.length,
    };
  } catch (error) {
    if (statusOf(error) === 404) return { jobs: [], gzipBytes: 0 };
    throw error;
  }
}

async function reconciled(namespace: string): Promise<Condition | undefined> {
  const prometheus = (await custom.getNamespacedCustomObject({
    ...group,
    plural: 'prometheuses',
    namespace,
    name: 'shared',
  })) as { status?: { conditions?: Condition[] } };
  return prometheus.status?.conditions?.find((c) => c.type === 'Reconciled');
}

/** Warning Events per ServiceMonitor with `reason`, counting repeats. */
async function warnings(namespace: string, reason: string): Promise<Record<string, number>> {
  const list = await core.listNamespacedEvent({
    namespace,
    fieldSelector: `involvedObject.kind=ServiceMonitor,reason=${reason}`,
  });
  const out: Record<string, number> = {};
  for (const event of list.items)
    out[event.involvedObject.name ?? ''] =
      (out[event.involvedObject.name ?? ''] ?? 0) + (event.count ?? 1);
  return out;
}

describe('a Prometheus shared by tenants', () => {
  test("two ServiceMonitors of about 0.9 MB are left out with an Event each; the other tenant's monitor reaches the configuration", async () => {
    const { home, a, b, tag } = await sharedSetup('prom-size');
    for (const name of ['huge-1', 'huge-2'])
      await monitor(a, name, tag, {
        relabelings: [{ targetLabel: 'x', replacement: randomBytes(675_000).toString('base64') }],
      });
    await monitor(b, 'small', tag);

    await waitFor(async () => (await configOf(home)).jobs.includes(`serviceMonitor/${b}/small/0`), {
      what: `tenant B's monitor in ${home}/shared's configuration`,
      timeoutMs: 30_000,
    });
    const config = await configOf(home);
    expect(config.jobs).toEqual([`serviceMonitor/${b}/small/0`]);
    const events = await waitFor(
      async () => {
        const found = await warnings(a, 'InvalidConfiguration');
        return Object.keys(found).length === 2 ? found : undefined;
      },
      { what: 'an InvalidConfiguration Event on each large monitor' },
    );
    expect(events).toEqual({ 'huge-1': 1, 'huge-2': 1 });
    const status = await waitFor(
      async () => {
        const condition = await reconciled(home);
        return condition?.message.includes('2 skipped') ? condition : undefined;
      },
      { what: 'the Reconciled condition to count the skipped monitors' },
    );
    expect(status).toMatchObject({ status: 'True', message: '1 ServiceMonitors, 2 skipped' });
  });

  test('monitors within the limits that together would overflow the Secret: the largest are left out with one Event each, the rest are written', async () => {
    const { home, a, b, tag } = await sharedSetup('prom-budget');
    const sizes = Array.from({ length: 16 }, (_, i) => 90 + i);
    for (const [i, size] of sizes.entries())
      await monitor(a, `bulky-${String(i).padStart(2, '0')}`, tag, {
        relabelings: bulkyRelabelings(size),
      });
    await monitor(b, 'small', tag);

    const names = sizes.map((_, i) => `bulky-${String(i).padStart(2, '0')}`);
    // The condition and the Secret are written by one render, but read here one after the other: while
    // monitors still arrive they can come from different renders, so wait until they agree.
    const { condition, config, leftOut } = (await waitFor(
      async () => {
        const found = await reconciled(home);
        const read = await configOf(home);
        if (
          found?.reason !== 'MonitorsLeftOut' ||
          !read.jobs.includes(`serviceMonitor/${b}/small/0`)
        )
          return undefined;
        const written = read.jobs
          .filter((job) => job.startsWith(`serviceMonitor/${a}/`))
          .map((job) => job.split('/')[2]);
        const out = names.filter((name) => !written.includes(name));
        // The message names at most 5 of them.
        const agrees =
          found.message.includes(`${out.length} left out`) &&
          out.filter((name) => found.message.includes(`${a}/${name}`)).length ===
            Math.min(out.length, 5);
        return agrees ? { condition: found, config: read, leftOut: out } : undefined;
      },
      {
        what: "the configuration with tenant B's monitor, some of tenant A's left out, and the condition naming them",
        timeoutMs: 60_000,
      },
    ))!;
    expect(config.gzipBytes).toBeLessThanOrEqual(MAX_CONFIG_GZIP_BYTES);
    // The largest go first: what is left out is a run of the largest.
    expect(leftOut.length).toBeGreaterThan(0);
    expect(leftOut).toEqual(
      sizes
        .slice(sizes.length - leftOut.length)
        .map((_, i) => `bulky-${String(sizes.length - leftOut.length + i).padStart(2, '0')}`),
    );
    expect(condition.status).toBe('True');
    expect(condition.message).toContain(
      `${leftOut.length} left out to keep the configuration within ${MAX_CONFIG_GZIP_BYTES} gzipped bytes`,
    );

    // Another render (a new monitor) does not report them again.
    await monitor(b, 'later', tag);
    await waitFor(async () => (await configOf(home)).jobs.includes(`serviceMonitor/${b}/later/0`), {
      what: 'the later monitor in the configuration',
      timeoutMs: 30_000,
    });
    const events = await waitFor(
      async () => {
        const found = await warnings(a, 'ConfigTooLarge');
        return Object.keys(found).length === leftOut.length ? found : undefined;
      },
      { what: 'a ConfigTooLarge Event on each monitor left out' },
    );
    expect(events).toEqual(Object.fromEntries(leftOut.map((name) => [name, 1])));
  });

  test('a configuration Secret the API server refuses to update leaves Reconciled=False with the reason', async () => {
    const { home, b, tag } = await sharedSetup('prom-refused');
    await monitor(b, 'first', tag);
    await waitFor(async () => (await configOf(home)).jobs.includes(`serviceMonitor/${b}/first/0`), {
      what: 'the first configuration',
    });
    // An immutable Secret: every later change of its data gets 422.
    await core.patchNamespacedSecret({
      namespace: home,
      name: 'prometheus-shared',
      body: [{ op: 'add', path: '/immutable', value: true }],
    });
    await monitor(b, 'second', tag);

    const condition = (await waitFor(
      async () => {
        const found = await reconciled(home);
        return found?.status === 'False' ? found : undefined;
      },
      { what: 'Reconciled=False after the refused write', timeoutMs: 30_000 },
    )) as Condition;
    expect(condition.reason).toBe('ConfigNotWritten');
    expect(condition.message).toContain(
      `the configuration Secret ${home}/prometheus-shared could not be written`,
    );
    expect(condition.message).toContain('immutable');
  });
});
