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
import type { RecordedRequest } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';

/**
 * Stopped means harmless (CoreOS operator principles: instances "continue to run unaffected if the
 * Operator is stopped or removed"): an etcd cluster serves while its operator is down, and an operator
 * restarted on an unchanged world writes nothing to what it manages.
 */

const STOPPED_MS = 60_000;
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Every object of the namespace the operator manages: `kind/name uid`, and for all but Pods (whose
 * status the local kubelet keeps writing) the resourceVersion, which any write changes.
 */
async function children(h: EtcdHarness): Promise<string[]> {
  const kinds = ['pods', 'services', 'secrets', 'configmaps', 'persistentvolumeclaims'];
  const listed = await Promise.all(
    kinds.map(async (kind) => {
      const list = await h.api.request<{ items: { metadata: { name: string; uid: string; resourceVersion: string } }[] }>('GET', `/api/v1/namespaces/${h.namespace}/${kind}`);
      return list.items.map((item) => `${kind}/${item.metadata.name} ${item.metadata.uid}${kind === 'pods' ? '' : ` @${item.metadata.resourceVersion}`}`);
    }),
  );
  return listed.flat().sort();
}

describe('an etcd cluster while its operator is stopped', () => {
  let h: EtcdHarness;
  const requests: RecordedRequest[] = [];
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd-stopped'), { onRequest: (method, path, status) => requests.push({ method, path, status }) });
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  test('answers reads and writes throughout 60 s with the operator stopped, and a restart writes nothing to any child', async () => {
    await createCluster(h, 'steady', { size: 3 });
    await waitFor(
      async () => {
        const cluster = await readCluster(h, 'steady');
        return cluster.status?.phase === 'Running' && cluster.status.size === 3 && (await memberList(h, 'steady').catch(() => [])).length === 3 && (await allHealthy(h, 'steady'));
      },
      { what: 'steady to run 3 healthy members', timeoutMs: 120_000 },
    );
    const before = await children(h);
    const clusterVersion = (await readCluster(h, 'steady')).status;

    await h.operator.stop();
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
    console.log(`etcd answered ${operations} reads and writes in ${Date.now() - stoppedAt} ms with the operator stopped, 0 failed`);
    expect(await children(h)).toEqual(before);

    const mark = requests.length;
    await h.restart();
    // The restarted operator has looked at the cluster (its daemon lists the members' Pods) several times.
    const podReads = (): number => requests.slice(mark).filter((r) => r.method === 'GET' && r.path.startsWith(`/api/v1/namespaces/${h.namespace}/pods`)).length;
    await waitFor(() => podReads() >= 5, { what: 'the restarted operator to check the cluster five times', timeoutMs: 60_000 });

    const writes = requests.slice(mark).filter((r) => WRITES.has(r.method) && !r.path.includes('/events') && !r.path.includes('/leases'));
    // Not even a refused create: the Services are read before any is created.
    expect(writes.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([]);
    expect(await children(h)).toEqual(before);
    expect((await readCluster(h, 'steady')).status).toEqual(clusterVersion);
  }, 300_000);
});
