import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/index.js';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { operatorWrites, writesQuiet } from '../../support/operators.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import {
  allHealthy,
  createCluster,
  etcdClient,
  installEtcdCrds,
  memberList,
  readCluster,
  startEtcdOperator,
  type EtcdHarness,
} from '../../support/etcd.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';
import { type RecordedRequest } from '../../../src/testing/operator-harness.js';

/**
 * Stopped means harmless (CoreOS operator principles: instances "continue to run unaffected if the
 * Operator is stopped or removed"): while both bundled operators are down for the same 60 s, an etcd
 * cluster serves and a Prometheus's StatefulSet and Secret are untouched; each operator restarted on
 * an unchanged world writes nothing to what it manages.
 */

const STOPPED_MS = 60_000;
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Every object of the namespace the operator manages: `kind/name uid`, and for all but Pods (whose
 * status the local kubelet keeps writing) the resourceVersion, which any write changes.
 */
async function etcdChildren(h: EtcdHarness): Promise<string[]> {
  const kinds = ['pods', 'services', 'secrets', 'configmaps', 'persistentvolumeclaims'];
  const listed = await Promise.all(
    kinds.map(async (kind) => {
      const list = await h.api.request<{
        items: { metadata: { name: string; uid: string; resourceVersion: string } }[];
      }>('GET', `/api/v1/namespaces/${h.namespace}/${kind}`);
      return list.items.map(
        (item) =>
          `${kind}/${item.metadata.name} ${item.metadata.uid}${kind === 'pods' ? '' : ` @${item.metadata.resourceVersion}`}`,
      );
    }),
  );
  return listed.flat().sort();
}

/** Every object of the namespace's Prometheus children kinds, as `kind/name uid @resourceVersion` (any write changes it). */
async function prometheusChildren(api: ApiClient, namespace: string): Promise<string[]> {
  const paths = {
    statefulsets: `/apis/apps/v1/namespaces/${namespace}/statefulsets`,
    secrets: `/api/v1/namespaces/${namespace}/secrets`,
    services: `/api/v1/namespaces/${namespace}/services`,
    configmaps: `/api/v1/namespaces/${namespace}/configmaps`,
  };
  const listed = await Promise.all(
    Object.entries(paths).map(async ([kind, path]) => {
      const list = await api.request<{
        items: { metadata: { name: string; uid: string; resourceVersion: string } }[];
      }>('GET', path);
      return list.items.map(
        (item) =>
          `${kind}/${item.metadata.name} ${item.metadata.uid} @${item.metadata.resourceVersion}`,
      );
    }),
  );
  return listed.flat().sort();
}

/** The Prometheus operator on a namespace of its own, with a Prometheus it has rendered and settled. */
class PrometheusScene {
  readonly requests: RecordedRequest[] = [];
  running: TestOperator | undefined;
  namespace = '';
  before: string[] = [];
  prometheusBefore: unknown;
  private readonly custom: CustomObjectsApi;
  private readonly api: ApiClient;

  constructor(private readonly kc: KubeConfig) {
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.api = new ApiClient(kc);
  }

  start(): Promise<TestOperator> {
    return runOperator({
      kubeConfig: this.kc,
      handlers: [PrometheusOperator],
      namespaces: [this.namespace],
      onRequest: (method, path, status) => this.requests.push({ method, path, status }),
    });
  }

  async settle(): Promise<void> {
    this.namespace = await uniqueNamespace(this.kc, 'prom-stopped');
    this.running = await this.start();
    const namespace = this.namespace;
    await this.custom.createNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      body: {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'Prometheus',
        metadata: { name: 'kept' },
        spec: { serviceMonitorSelector: {} },
      },
    });
    await this.custom.createNamespacedCustomObject({
      ...group,
      plural: 'servicemonitors',
      namespace,
      body: {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: { name: 'app' },
        spec: { selector: { matchLabels: { app: 'app' } }, endpoints: [{ port: 'metrics' }] },
      },
    });
    const rendered = async (): Promise<boolean> => {
      const names = await prometheusChildren(this.api, namespace);
      return (
        names.some((n) => n.startsWith('statefulsets/prometheus-kept ')) &&
        names.some((n) => n.startsWith('secrets/prometheus-kept '))
      );
    };
    await waitFor(rendered, { what: 'the StatefulSet and the Secret of kept' });
    // Settled: the Prometheus has its status, and the Secret holds the monitor's job.
    await waitFor(async () => (await this.prometheus()).status?.selectedServiceMonitors === 1, {
      what: 'kept to select the ServiceMonitor',
    });
    await writesQuiet(this.requests, 2_000);
    this.before = await this.children();
    this.prometheusBefore = await this.prometheus();
  }

  children(): Promise<string[]> {
    return prometheusChildren(this.api, this.namespace);
  }

  prometheus(): Promise<{ status?: { selectedServiceMonitors?: number } }> {
    return this.custom.getNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace: this.namespace,
      name: 'kept',
    }) as Promise<{ status?: { selectedServiceMonitors?: number } }>;
  }

  /** Restarts the operator and returns its writes once it has rendered kept again. */
  async restartWrites(): Promise<string[]> {
    const mark = this.requests.length;
    this.running = await this.start();
    // The restarted operator has rendered kept again: it read its StatefulSet (which it reads after writing, or not, the Secret).
    await waitFor(
      () =>
        this.requests
          .slice(mark)
          .some(
            (r) =>
              r.method === 'GET' &&
              r.path === `/apis/apps/v1/namespaces/${this.namespace}/statefulsets/prometheus-kept`,
          ),
      {
        what: 'the restarted operator to reconcile kept',
      },
    );
    // A write the restart makes after that read would come within this.
    await writesQuiet(this.requests, 2_000);
    return operatorWrites(this.requests.slice(mark)).map((r) => `${r.method} ${r.path}`);
  }

  async stop(): Promise<void> {
    await this.running?.stop();
    this.running = undefined;
    this.api.close();
  }
}

describe('the bundled operators while they are stopped', () => {
  let h: EtcdHarness;
  let prometheus: PrometheusScene;
  const requests: RecordedRequest[] = [];
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd-stopped'), {
      onRequest: (method, path, status) => requests.push({ method, path, status }),
    });
    prometheus = new PrometheusScene((await monitoringPlane()).kc);
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    await prometheus?.stop();
  });

  test('an etcd cluster answers reads and writes and a Prometheus is untouched throughout 60 s with both stopped, and restarts write nothing to any child', async () => {
    const promSettled = prometheus.settle();
    await createCluster(h, 'steady', { size: 3 });
    await waitFor(
      async () => {
        const cluster = await readCluster(h, 'steady');
        return (
          cluster.status?.phase === 'Running' &&
          cluster.status.size === 3 &&
          (await memberList(h, 'steady').catch(() => [])).length === 3 &&
          (await allHealthy(h, 'steady'))
        );
      },
      { what: 'steady to run 3 healthy members', timeoutMs: 120_000 },
    );
    const before = await etcdChildren(h);
    const clusterVersion = (await readCluster(h, 'steady')).status;
    await promSettled;

    await Promise.all([h.operator.stop(), prometheus.running!.stop()]);
    const stoppedAt = Date.now();
    const etcd = etcdClient(h, 'steady');
    let operations = 0;
    const failures: string[] = [];
    try {
      for (let i = 0; Date.now() - stoppedAt < STOPPED_MS; i++) {
        try {
          await etcd.put(`while-stopped-${i}`).value(String(i));
          const read = await etcd.get(`while-stopped-${i}`).string();
          if (read !== String(i)) failures.push(`read ${read} for key ${i}`);
          operations += 2;
        } catch (error) {
          failures.push(`${i}: ${error instanceof Error ? error.message : String(error)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } finally {
      etcd.close();
    }
    expect(failures).toEqual([]);
    expect(operations).toBeGreaterThan(100);
    console.log(
      `etcd answered ${operations} reads and writes in ${Date.now() - stoppedAt} ms with the operator stopped, 0 failed`,
    );
    expect(await etcdChildren(h)).toEqual(before);
    expect(await prometheus.children()).toEqual(prometheus.before);

    expect(await prometheus.restartWrites()).toEqual([]);
    expect(await prometheus.children()).toEqual(prometheus.before);
    expect(await prometheus.prometheus()).toEqual(prometheus.prometheusBefore);

    const mark = requests.length;
    await h.restart();
    // The restarted operator has looked at the cluster (its daemon lists the members' Pods) several times.
    const podReads = (): number =>
      requests
        .slice(mark)
        .filter(
          (r) => r.method === 'GET' && r.path.startsWith(`/api/v1/namespaces/${h.namespace}/pods`),
        ).length;
    await waitFor(() => podReads() >= 5, {
      what: 'the restarted operator to check the cluster five times',
      timeoutMs: 60_000,
    });

    const writes = requests
      .slice(mark)
      .filter(
        (r) => WRITES.has(r.method) && !r.path.includes('/events') && !r.path.includes('/leases'),
      );
    // Not even a refused create: the Services are read before any is created.
    expect(writes.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([]);
    expect(await etcdChildren(h)).toEqual(before);
    expect((await readCluster(h, 'steady')).status).toEqual(clusterVersion);
  }, 300_000);
});
