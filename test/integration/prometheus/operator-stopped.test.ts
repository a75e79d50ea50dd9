import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/index.js';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, waitFor, type RecordedRequest, type TestOperator } from '../../../src/testing/index.js';
import { uniqueNamespace } from '../../support/cluster.js';
import { operatorWrites, writesQuiet } from '../../support/operators.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';

/**
 * Stopped means harmless: a Prometheus's StatefulSet and config Secret are left as they are while the
 * operator is stopped, and a restarted operator on an unchanged world writes nothing to them.
 */

const STOPPED_MS = 60_000;

let kc: KubeConfig;
let api: ApiClient;
let running: TestOperator | undefined;

beforeAll(async () => {
  ({ kc } = await monitoringPlane());
  api = new ApiClient(kc);
});
afterAll(async () => {
  await running?.stop();
  api?.close();
});

/** Every object of the namespace's children kinds, as `kind/name uid @resourceVersion` (any write changes it). */
async function children(namespace: string): Promise<string[]> {
  const paths = {
    statefulsets: `/apis/apps/v1/namespaces/${namespace}/statefulsets`,
    secrets: `/api/v1/namespaces/${namespace}/secrets`,
    services: `/api/v1/namespaces/${namespace}/services`,
    configmaps: `/api/v1/namespaces/${namespace}/configmaps`,
  };
  const listed = await Promise.all(
    Object.entries(paths).map(async ([kind, path]) => {
      const list = await api.request<{ items: { metadata: { name: string; uid: string; resourceVersion: string } }[] }>('GET', path);
      return list.items.map((item) => `${kind}/${item.metadata.name} ${item.metadata.uid} @${item.metadata.resourceVersion}`);
    }),
  );
  return listed.flat().sort();
}

describe('a Prometheus while its operator is stopped', () => {
  test('its StatefulSet and Secret are untouched for 60 s with the operator stopped, and a restart writes nothing to any child', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-stopped');
    const requests: RecordedRequest[] = [];
    const start = async (): Promise<TestOperator> =>
      runOperator({ kubeConfig: kc, handlers: [PrometheusOperator], namespaces: [namespace], onRequest: (method, path, status) => requests.push({ method, path, status }) });
    running = await start();
    const custom = kc.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      body: { apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { name: 'kept' }, spec: { serviceMonitorSelector: {} } },
    });
    await custom.createNamespacedCustomObject({
      ...group,
      plural: 'servicemonitors',
      namespace,
      body: { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { name: 'app' }, spec: { selector: { matchLabels: { app: 'app' } }, endpoints: [{ port: 'metrics' }] } },
    });
    const rendered = async (): Promise<boolean> => {
      const names = await children(namespace);
      return names.some((n) => n.startsWith('statefulsets/prometheus-kept ')) && names.some((n) => n.startsWith('secrets/prometheus-kept '));
    };
    await waitFor(rendered, { what: 'the StatefulSet and the Secret of kept' });
    // Settled: the Prometheus has its status, and the Secret holds the monitor's job.
    await waitFor(
      async () => ((await custom.getNamespacedCustomObject({ ...group, plural: 'prometheuses', namespace, name: 'kept' })) as { status?: { selectedServiceMonitors?: number } }).status?.selectedServiceMonitors === 1,
      { what: 'kept to select the ServiceMonitor' },
    );
    await writesQuiet(requests, 2_000);
    const before = await children(namespace);
    const prometheusBefore = await custom.getNamespacedCustomObject({ ...group, plural: 'prometheuses', namespace, name: 'kept' });

    await running.stop();
    running = undefined;
    await new Promise((resolve) => setTimeout(resolve, STOPPED_MS));
    expect(await children(namespace)).toEqual(before);

    const mark = requests.length;
    running = await start();
    // The restarted operator has rendered kept again: it read its StatefulSet (which it reads after writing, or not, the Secret).
    await waitFor(() => requests.slice(mark).some((r) => r.method === 'GET' && r.path === `/apis/apps/v1/namespaces/${namespace}/statefulsets/prometheus-kept`), {
      what: 'the restarted operator to reconcile kept',
    });
    // A write the restart makes after that read would come within this.
    await writesQuiet(requests, 2_000);
    const writes = operatorWrites(requests.slice(mark));
    expect(writes.map((r) => `${r.method} ${r.path}`)).toEqual([]);
    expect(await children(namespace)).toEqual(before);
    expect(await custom.getNamespacedCustomObject({ ...group, plural: 'prometheuses', namespace, name: 'kept' })).toEqual(prometheusBefore);
  }, 180_000);
});
