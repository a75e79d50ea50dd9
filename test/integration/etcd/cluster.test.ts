import { installEtcdCrds, allHealthy, createCluster, etcdClient, memberList, memberPods, readCluster, setSize, startEtcdOperator, type EtcdHarness } from '../../support/etcd.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { eventually } from '../../support/widgets.js';

// Real etcd 3.4 refuses a membership change until every member has been connected for 5 s, so
// each scaling step takes seconds; these specs get minutes, not the default minute.
const MINUTES = 240_000;

/** Waits until `member list` shows exactly `size` started members, every one healthy, and status agrees. */
async function settledAt(h: EtcdHarness, name: string, size: number, timeoutMs = 90_000): Promise<void> {
  await eventually(
    async () => {
      const cluster = await readCluster(h, name);
      if (cluster.status?.phase !== 'Running' || cluster.status.size !== size) return false;
      if (cluster.status.conditions?.find((c) => c.type === 'Available')?.status !== 'True') return false;
      const members = await memberList(h, name).catch(() => []);
      return members.length === size && members.every((m) => m.name !== '') && (await allHealthy(h, name));
    },
    `${name} to settle at ${size} healthy members`,
    timeoutMs,
  );
}

describe('EtcdCluster on real etcd processes', () => {
  let h: EtcdHarness;
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd'));
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  test('scaling 1 → 3 → 5 → 3 leaves exactly the declared members, all healthy, with earlier data readable', async () => {
    await createCluster(h, 'scaled', { size: 1 });
    await settledAt(h, 'scaled', 1);
    const etcd = etcdClient(h, 'scaled');
    await etcd.put('before-scaling').value('kept');
    etcd.close();

    for (const size of [3, 5, 3]) {
      await setSize(h, 'scaled', size);
      await settledAt(h, 'scaled', size);
      const members = await memberList(h, 'scaled');
      const pods = await memberPods(h, 'scaled');
      expect(pods.map((p) => p.metadata.name).sort()).toEqual(members.map((m) => m.name).sort());
      const reader = etcdClient(h, 'scaled');
      await expect(reader.get('before-scaling').string()).resolves.toBe('kept');
      reader.close();
    }
    const cluster = await readCluster(h, 'scaled');
    expect(cluster.status?.members?.ready).toHaveLength(3);
    expect(cluster.status?.currentVersion).toBe('3.4.23');
  }, MINUTES);

  test('a killed member is replaced and the cluster is back to 3 healthy members', async () => {
    await createCluster(h, 'healing', { size: 3 });
    await settledAt(h, 'healing', 3);
    const before = (await memberList(h, 'healing')).map((m) => m.name);
    const victim = before[0]!;
    expect(h.runner.kill(h.namespace, victim)).toBe(true);

    await eventually(async () => !(await memberList(h, 'healing').catch(() => [])).some((m) => m.name === victim), `${victim} to be removed`, 60_000);
    await settledAt(h, 'healing', 3);
    const after = (await memberList(h, 'healing')).map((m) => m.name);
    expect(after).not.toContain(victim);
    expect(after.filter((n) => before.includes(n))).toHaveLength(2);
  }, MINUTES);
});
