/**
 * Rendering reads the ServiceMonitors, PodMonitors, PrometheusRules and Namespaces from the operator's
 * watches: once the operator is ready and a Prometheus rendered, a ServiceMonitor change re-renders it
 * without a single LIST request, however many monitors and namespaces it selects.
 */
import { gunzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import type { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';
import { type RecordedRequest } from '../../../src/testing/operator-harness.js';

const NAMESPACES = 10;
const PER_NAMESPACE = 10;

let kc: KubeConfig;
let running: TestOperator | undefined;
let custom: CustomObjectsApi;
let core: CoreV1Api;

beforeAll(async () => {
  ({ kc, custom, core } = await monitoringPlane());
});
afterAll(async () => {
  await running?.stop();
});

interface Job {
  job_name: string;
  scrape_interval?: string;
}

async function jobsOf(namespace: string, name: string): Promise<Job[]> {
  try {
    const secret = await core.readNamespacedSecret({ namespace, name: `prometheus-${name}` });
    const text = gunzipSync(
      Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64'),
    ).toString('utf8');
    return (yaml.load(text) as { scrape_configs?: Job[] }).scrape_configs ?? [];
  } catch (error) {
    if (statusOf(error) === 404) return [];
    throw error;
  }
}

/** A GET of a collection (`/api/v1/namespaces`, `/apis/<group>/<version>[/namespaces/<ns>]/<plural>`): a LIST. */
function isList({ method, path }: RecordedRequest): boolean {
  if (method !== 'GET') return false;
  const rest = path
    .replace(/^\/api\/v1\/?|^\/apis\/[^/]+\/[^/]+\/?/, '')
    .split('/')
    .filter(Boolean);
  return rest.length === 1 || (rest.length === 3 && rest[0] === 'namespaces');
}

describe('a Prometheus selecting 100 ServiceMonitors across 10 namespaces', () => {
  test('a change to one ServiceMonitor re-renders the configuration with no LIST request', async () => {
    const requests: RecordedRequest[] = [];
    running = await runOperator({
      kubeConfig: kc,
      handlers: [PrometheusOperator],
      onRequest: (method, path, status) => requests.push({ method, path, status }),
    });
    const tag = `cache-renders-${Date.now().toString(36)}`;
    const namespaces: string[] = [];
    for (let n = 0; n < NAMESPACES; n++) {
      const namespace = await uniqueNamespace(kc, 'prom-cache');
      await core.patchNamespace({
        name: namespace,
        body: [{ op: 'add', path: '/metadata/labels', value: { selected: tag } }],
      });
      namespaces.push(namespace);
    }
    const home = namespaces[0] as string;
    // One namespace's monitors at a time, in parallel: 100 creates one by one take most of a minute
    // on a loaded test plane.
    for (const namespace of namespaces) {
      const creates = Array.from({ length: PER_NAMESPACE }, (_, m) =>
        custom.createNamespacedCustomObject({
          ...group,
          plural: 'servicemonitors',
          namespace,
          body: {
            apiVersion: 'monitoring.coreos.com/v1',
            kind: 'ServiceMonitor',
            metadata: { name: `app-${m}`, labels: { team: tag } },
            spec: {
              selector: { matchLabels: { app: `app-${m}` } },
              endpoints: [{ port: 'metrics' }],
            },
          },
        }),
      );
      await Promise.all(creates);
    }
    await custom.createNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace: home,
      body: {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'Prometheus',
        metadata: { name: 'wide' },
        spec: {
          serviceMonitorSelector: { matchLabels: { team: tag } },
          serviceMonitorNamespaceSelector: { matchLabels: { selected: tag } },
        },
      },
    });
    await waitFor(async () => (await jobsOf(home, 'wide')).length === NAMESPACES * PER_NAMESPACE, {
      what: `100 jobs in ${home}/wide's configuration`,
      timeoutMs: 120_000,
    });

    const since = requests.length;
    const changed = namespaces[NAMESPACES - 1] as string;
    await custom.patchNamespacedCustomObject({
      ...group,
      plural: 'servicemonitors',
      namespace: changed,
      name: 'app-3',
      body: [{ op: 'add', path: '/spec/endpoints/0/interval', value: '17s' }],
    });
    const job = `serviceMonitor/${changed}/app-3/0`;
    await waitFor(
      async () =>
        (await jobsOf(home, 'wide')).some((j) => j.job_name === job && j.scrape_interval === '17s'),
      { what: `${job} to scrape every 17s`, timeoutMs: 60_000 },
    );

    const lists = requests.slice(since).filter(isList);
    // The figure for the closing note: the render before this change listed 3 kinds + Namespaces.
    console.log(
      `LIST requests of the re-render after one ServiceMonitor change (100 monitors, 10 namespaces): ${lists.length}`,
    );
    expect(lists).toEqual([]);
  }, 300_000);
});
