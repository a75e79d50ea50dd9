import {
  installEtcdCrds,
  clusterPath,
  eventsFor,
  createCluster,
  etcdClient,
  memberList,
  memberPods,
  readCluster,
  setSize,
  settledAt,
  startEtcdOperator,
  type EtcdHarness,
} from '../../support/etcd.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';

// Real etcd 3.4 refuses a membership change until every member has been connected for 5 s, so
// each scaling step takes seconds; these specs get minutes, not the default minute.
const MINUTES = 240_000;
const AVAILABLE = { available: true, timeoutMs: 90_000 };

describe('EtcdCluster on real etcd processes', () => {
  let h: EtcdHarness;
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd'));
    // The later specs' clusters form (about 10 s each for 3 members) while the first spec runs.
    await createCluster(h, 'healing', { size: 3 });
    await createCluster(h, 'quorum', { size: 3 });
    await createCluster(h, 'paused', { size: 1 });
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  test(
    'scaling 1 → 3 → 5 → 3 leaves exactly the declared members, all healthy, with earlier data readable',
    async () => {
      await createCluster(h, 'scaled', { size: 1 });
      await settledAt(h, 'scaled', 1, AVAILABLE);
      const etcd = etcdClient(h, 'scaled');
      await etcd.put('before-scaling').value('kept');
      etcd.close();

      for (const size of [3, 5, 3]) {
        await setSize(h, 'scaled', size);
        await settledAt(h, 'scaled', size, AVAILABLE);
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
    },
    MINUTES,
  );

  test(
    'a killed member is replaced and the cluster is back to 3 healthy members',
    async () => {
      await settledAt(h, 'healing', 3, AVAILABLE);
      const before = (await memberList(h, 'healing')).map((m) => m.name);
      const victim = before[0]!;
      expect(h.runner.kill(h.namespace, victim)).toBe(true);

      await waitFor(
        async () =>
          !(await memberList(h, 'healing').catch(() => [])).some((m) => m.name === victim),
        { what: `${victim} to be removed`, timeoutMs: 60_000 },
      );
      await settledAt(h, 'healing', 3, AVAILABLE);
      const after = (await memberList(h, 'healing')).map((m) => m.name);
      expect(after).not.toContain(victim);
      expect(after.filter((n) => before.includes(n))).toHaveLength(2);
    },
    MINUTES,
  );

  test(
    'losing quorum is reported in status and an Event, and no member is removed or Pod deleted',
    async () => {
      await settledAt(h, 'quorum', 3, AVAILABLE);
      const members = (await memberList(h, 'quorum')).map((m) => m.name);
      h.runner.kill(h.namespace, members[0]!);
      h.runner.kill(h.namespace, members[1]!);

      await waitFor(
        async () => /lost quorum/.test((await readCluster(h, 'quorum')).status?.reason ?? ''),
        { what: 'status to report lost quorum', timeoutMs: 30_000 },
      );
      const cluster = await readCluster(h, 'quorum');
      expect(cluster.status?.conditions?.find((c) => c.type === 'Available')).toMatchObject({
        status: 'False',
        reason: 'LostQuorum',
      });
      await waitFor(
        async () =>
          (await eventsFor(h, 'quorum')).some(
            (e) => e.reason === 'LostQuorum' && e.type === 'Warning',
          ),
        { what: 'a LostQuorum Event', timeoutMs: 10_000 },
      );
      // Several more looks: still nothing removed, still one Event (no flapping).
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      expect((await memberPods(h, 'quorum')).map((p) => p.metadata.name).sort()).toEqual(
        [...members].sort(),
      );
      expect(
        (await eventsFor(h, 'quorum'))
          .filter((e) => e.reason === 'LostQuorum')
          .map((e) => e.count ?? 1),
      ).toEqual([1]);
    },
    MINUTES,
  );

  test(
    'a member added whose Pod was refused gets its Pod once Pods are allowed again, instead of leaving the cluster without quorum',
    async () => {
      await createCluster(h, 'halfway', { size: 1 });
      await settledAt(h, 'halfway', 1, AVAILABLE);
      // A quota already used up refuses every new Pod (its usage is written here: no controller manager computes it).
      const quota = `/api/v1/namespaces/${h.namespace}/resourcequotas`;
      await h.api.request('POST', quota, {
        body: {
          apiVersion: 'v1',
          kind: 'ResourceQuota',
          metadata: { name: 'no-pods' },
          spec: { hard: { pods: '1' } },
        },
      });
      await h.api.request('PATCH', `${quota}/no-pods/status`, {
        body: { status: { hard: { pods: '1' }, used: { pods: '1' } } },
        contentType: 'application/merge-patch+json',
      });
      await setSize(h, 'halfway', 2);
      // The member is added (1 of 2 running: no quorum) and its Pod refused.
      await waitFor(async () => (await memberList(h, 'halfway').catch(() => [])).length === 2, {
        what: 'the second member to be added',
        timeoutMs: 30_000,
      });
      expect(await memberPods(h, 'halfway')).toHaveLength(1);

      await h.api.request('DELETE', `${quota}/no-pods`);
      await settledAt(h, 'halfway', 2, AVAILABLE);
      // Events are posted in the background: the one saying why may land after the cluster settles.
      await waitFor(
        async () =>
          (await eventsFor(h, 'halfway')).some((e) =>
            /created the Pod of member .*, added earlier but never started/.test(e.message ?? ''),
          ),
        { what: 'the Event saying the member added earlier got its Pod', timeoutMs: 10_000 },
      );
    },
    MINUTES,
  );

  test(
    'a paused cluster is left alone: a size change waits until it is unpaused',
    async () => {
      await settledAt(h, 'paused', 1, AVAILABLE);
      await h.api.request('PATCH', clusterPath(h.namespace, 'paused'), {
        body: { spec: { paused: true, size: 3 } },
        contentType: 'application/merge-patch+json',
      });
      await waitFor(async () => (await readCluster(h, 'paused')).status?.controlPaused === true, {
        what: 'status.controlPaused',
        timeoutMs: 10_000,
      });
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(await memberPods(h, 'paused')).toHaveLength(1);

      await h.api.request('PATCH', clusterPath(h.namespace, 'paused'), {
        body: { spec: { paused: false } },
        contentType: 'application/merge-patch+json',
      });
      await settledAt(h, 'paused', 3, AVAILABLE);
    },
    MINUTES,
  );
});
