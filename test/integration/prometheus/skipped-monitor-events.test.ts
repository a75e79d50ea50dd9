/**
 * ServiceMonitors that pass admission but that a Prometheus skips at render (their scrapeTimeout is
 * longer than its scrape interval): however many renders follow, each gets one Warning Event, not
 * one per render.
 */
import type { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { gunzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';

const SKIPPED = 40;
const RENDERS = 5;

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

function monitor(
  namespace: string,
  name: string,
  endpoint: Record<string, unknown>,
): Promise<unknown> {
  return custom.createNamespacedCustomObject({
    ...group,
    plural: 'servicemonitors',
    namespace,
    body: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name },
      spec: { selector: {}, endpoints: [{ port: 'metrics', ...endpoint }] },
    },
  });
}

async function jobs(namespace: string): Promise<string[]> {
  try {
    const secret = await core.readNamespacedSecret({ namespace, name: 'prometheus-main' });
    const text = gunzipSync(
      Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64'),
    ).toString('utf8');
    return (
      (yaml.load(text) as { scrape_configs?: Array<{ job_name: string }> }).scrape_configs ?? []
    ).map((job) => job.job_name);
  } catch (error) {
    if (statusOf(error) === 404) return [];
    throw error;
  }
}

/** InvalidConfiguration Warnings per ServiceMonitor, repeats counted. */
async function warnings(namespace: string): Promise<Record<string, number>> {
  const list = await core.listNamespacedEvent({
    namespace,
    fieldSelector: 'involvedObject.kind=ServiceMonitor,reason=InvalidConfiguration',
  });
  const out: Record<string, number> = {};
  for (const event of list.items)
    out[event.involvedObject.name ?? ''] =
      (out[event.involvedObject.name ?? ''] ?? 0) + (event.count ?? 1);
  return out;
}

describe(`${SKIPPED} ServiceMonitors a Prometheus skips at render`, () => {
  test(`get one Warning Event each over ${RENDERS} more renders`, async () => {
    const namespace = await uniqueNamespace(kc, 'prom-skipped');
    // No interval: the Prometheus's 30s applies at render, and a 1m timeout is longer. Created at
    // once: one by one, 40 round trips to a loaded test plane took most of a minute.
    await Promise.all(
      Array.from({ length: SKIPPED }, (_, i) =>
        monitor(namespace, `slow-${i}`, { scrapeTimeout: '1m' }),
      ),
    );
    await custom.createNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      body: {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'Prometheus',
        metadata: { name: 'main' },
        spec: { serviceMonitorSelector: {} },
      },
    });
    for (let render = 0; render < RENDERS; render++) {
      await monitor(namespace, `fine-${render}`, {});
      await waitFor(
        async () =>
          (await jobs(namespace)).includes(`serviceMonitor/${namespace}/fine-${render}/0`),
        { what: `fine-${render} in the configuration` },
      );
    }
    // Events are posted in order: once the last one skipped is there, every earlier one is.
    await monitor(namespace, 'last-slow', { scrapeTimeout: '1m' });
    const counts = (await waitFor(
      async () => {
        const found = await warnings(namespace);
        return found['last-slow'] !== undefined ? found : undefined;
      },
      { what: 'the Warning on the last skipped monitor' },
    )) as Record<string, number>;

    const perMonitor = Array.from({ length: SKIPPED }, (_, i) => counts[`slow-${i}`] ?? 0);
    console.log(
      `InvalidConfiguration Events for ${SKIPPED} skipped monitors over ${RENDERS + 2}+ renders: ${perMonitor.reduce((a, b) => a + b, 0)}`,
    );
    expect(perMonitor).toEqual(Array.from({ length: SKIPPED }, () => 1));
  }, 300_000);
});
