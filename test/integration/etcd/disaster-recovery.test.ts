import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import {
  createCluster,
  createEtcdObject,
  etcdObjectPath,
  etcdStatus,
  eventsFor,
  installEtcdCrds,
  putKeys,
  readKey,
  memberList,
  memberPods,
  readCluster,
  settledAt,
  startEtcdOperator,
  type EtcdHarness,
} from '../../support/etcd.js';
import { waitFor } from '../../support/wait-for.js';

const MINUTES = 240_000;

interface BackupStatus {
  succeeded?: boolean;
  etcdRevision?: number;
  lastBackupPath?: string;
  lastBackupCluster?: string;
}

/** Kills the etcd process of `count` members and waits until their Pods show them dead. */
async function killMembers(h: EtcdHarness, cluster: string, count: number): Promise<void> {
  const members = (await memberList(h, cluster)).map((m) => m.name);
  for (const victim of members.slice(0, count))
    expect(h.runner.kill(h.namespace, victim)).toBe(true);
  await waitFor(
    async () =>
      (await memberPods(h, cluster)).filter((p) => p.status?.phase === 'Failed').length === count,
    {
      what: `the Pods of ${count} killed members of ${cluster} to show them dead`,
      timeoutMs: 30_000,
    },
  );
}

describe('disaster recovery (spec.restorePolicy) on real etcd processes', () => {
  let h: EtcdHarness;
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd-dr'));
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  test(
    'a cluster that lost quorum for afterQuorumLostSeconds is restored from its newest backup, with an Event naming the revision',
    async () => {
      await createCluster(h, 'dr', { size: 3, restorePolicy: { afterQuorumLostSeconds: 5 } });
      await settledAt(h, 'dr', 3);
      await putKeys(h, 'dr', { 'before-backup': 'kept' });
      await createEtcdObject(h, 'EtcdBackup', 'dr-once', {
        etcdEndpoints: ['http://dr-client:2379'],
        storageType: 'Local',
        local: { path: 'dr/one-shot.db' },
      });
      await waitFor(
        async () =>
          (await etcdStatus<BackupStatus>(h, 'etcdbackups', 'dr-once'))?.succeeded === true,
        { what: 'the one-shot backup', timeoutMs: 30_000 },
      );
      const backup = (await etcdStatus<BackupStatus>(h, 'etcdbackups', 'dr-once'))!;
      expect(backup).toMatchObject({ lastBackupPath: 'dr/one-shot.db', lastBackupCluster: 'dr' });
      await putKeys(h, 'dr', { 'after-backup': 'lost' });
      const oldUid = (await readCluster(h, 'dr')).metadata.uid;

      await killMembers(h, 'dr', 2);
      await waitFor(
        async () => (await readCluster(h, 'dr').catch(() => undefined))?.metadata.uid !== oldUid,
        { what: 'the cluster to be recreated from the backup', timeoutMs: 90_000 },
      );
      await settledAt(h, 'dr', 3);

      await expect(readKey(h, 'dr', 'before-backup')).resolves.toBe('kept');
      await expect(readKey(h, 'dr', 'after-backup')).resolves.toBeNull();
      const restore = await h.api.request<{
        metadata: { annotations?: Record<string, string> };
        status?: { succeeded?: boolean };
      }>('GET', etcdObjectPath(h.namespace, 'etcdrestores', 'dr'));
      expect(restore.status?.succeeded).toBe(true);
      expect(restore.metadata.annotations).toMatchObject({
        'etcd.database.coreos.com/recovery-of': oldUid,
        'etcd.database.coreos.com/restore-revision': String(backup.etcdRevision),
      });
      const events = await eventsFor(h, 'dr');
      expect(events).toContainEqual(
        expect.objectContaining({
          type: 'Warning',
          reason: 'DisasterRecovery',
          message: expect.stringContaining(`writes after revision ${backup.etcdRevision} are lost`),
        }),
      );
      expect(events).toContainEqual(
        expect.objectContaining({
          type: 'Warning',
          reason: 'RestoredFromBackup',
          message: expect.stringContaining(`as of revision ${backup.etcdRevision}`),
        }),
      );
    },
    MINUTES,
  );

  test(
    'with no backup of the cluster, its lost quorum (here: its only member dead) is reported once and nothing is deleted',
    async () => {
      await createCluster(h, 'nobackup', { size: 1, restorePolicy: { afterQuorumLostSeconds: 5 } });
      await settledAt(h, 'nobackup', 1);
      const uid = (await readCluster(h, 'nobackup')).metadata.uid;

      await killMembers(h, 'nobackup', 1);
      await waitFor(
        async () => (await eventsFor(h, 'nobackup')).some((e) => e.reason === 'NoBackupToRestore'),
        { what: 'the NoBackupToRestore Warning', timeoutMs: 60_000 },
      );
      // Several more looks at the same standing problem (the settled look is 1 s here).
      await new Promise((resolve) => setTimeout(resolve, 3_000));

      const cluster = await readCluster(h, 'nobackup');
      expect(cluster.metadata.uid).toBe(uid);
      expect(cluster.status?.conditions).toContainEqual(
        expect.objectContaining({ type: 'Quorum', status: 'False', reason: 'QuorumLost' }),
      );
      expect(
        (await eventsFor(h, 'nobackup')).filter((e) => e.reason === 'NoBackupToRestore'),
      ).toEqual([expect.objectContaining({ count: 1 })]);
      await expect(
        h.api.request('GET', etcdObjectPath(h.namespace, 'etcdrestores', 'nobackup')),
      ).rejects.toMatchObject({ status: 404 });
    },
    MINUTES,
  );
});
