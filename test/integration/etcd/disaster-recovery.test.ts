import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import {
  createCluster,
  createEtcdObject,
  etcdClient,
  etcdObjectPath,
  etcdStatus,
  eventsFor,
  installEtcdCrds,
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
}

async function putKeys(h: EtcdHarness, cluster: string, keys: Record<string, string>): Promise<void> {
  const etcd = etcdClient(h, cluster);
  try {
    for (const [key, value] of Object.entries(keys)) await etcd.put(key).value(value);
  } finally {
    etcd.close();
  }
}

async function readKey(h: EtcdHarness, cluster: string, key: string): Promise<string | null> {
  const etcd = etcdClient(h, cluster);
  try {
    return await etcd.get(key).string();
  } finally {
    etcd.close();
  }
}

/** Kills the etcd process of all but one member: a majority of 3 gone, the survivor alone. */
async function killMajority(h: EtcdHarness, cluster: string): Promise<void> {
  const members = (await memberList(h, cluster)).map((m) => m.name);
  for (const victim of members.slice(1)) expect(h.runner.kill(h.namespace, victim)).toBe(true);
  await waitFor(async () => (await memberPods(h, cluster)).filter((p) => p.status?.phase === 'Failed').length === members.length - 1, {
    what: `the Pods of ${members.length - 1} killed members of ${cluster} to show them dead`,
    timeoutMs: 30_000,
  });
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

  test('a cluster that lost quorum for afterQuorumLostSeconds is restored from its newest backup, with an Event naming the revision', async () => {
    await createCluster(h, 'dr', { size: 3, restorePolicy: { afterQuorumLostSeconds: 5 } });
    await settledAt(h, 'dr', 3);
    await putKeys(h, 'dr', { 'before-backup': 'kept' });
    await createEtcdObject(h, 'EtcdBackup', 'dr-once', { etcdEndpoints: ['http://dr-client:2379'], storageType: 'Local', local: { path: 'dr/one-shot.db' } });
    await waitFor(async () => (await etcdStatus<BackupStatus>(h, 'etcdbackups', 'dr-once'))?.succeeded === true, { what: 'the one-shot backup', timeoutMs: 30_000 });
    const backup = (await etcdStatus<BackupStatus>(h, 'etcdbackups', 'dr-once'))!;
    expect(backup.lastBackupPath).toBe('dr/one-shot.db');
    await putKeys(h, 'dr', { 'after-backup': 'lost' });
    const oldUid = (await readCluster(h, 'dr')).metadata.uid;

    await killMajority(h, 'dr');
    await waitFor(async () => (await readCluster(h, 'dr').catch(() => undefined))?.metadata.uid !== oldUid, { what: 'the cluster to be recreated from the backup', timeoutMs: 90_000 });
    await settledAt(h, 'dr', 3);

    await expect(readKey(h, 'dr', 'before-backup')).resolves.toBe('kept');
    await expect(readKey(h, 'dr', 'after-backup')).resolves.toBeNull();
    const restore = await h.api.request<{ metadata: { annotations?: Record<string, string> }; status?: { succeeded?: boolean } }>('GET', etcdObjectPath(h.namespace, 'etcdrestores', 'dr'));
    expect(restore.status?.succeeded).toBe(true);
    expect(restore.metadata.annotations).toMatchObject({ 'etcd.database.coreos.com/recovery-of': oldUid, 'etcd.database.coreos.com/restore-revision': String(backup.etcdRevision) });
    const events = await eventsFor(h, 'dr');
    expect(events).toContainEqual(expect.objectContaining({ type: 'Warning', reason: 'DisasterRecovery', message: expect.stringContaining(`writes after revision ${backup.etcdRevision} are lost`) }));
    expect(events).toContainEqual(expect.objectContaining({ type: 'Warning', reason: 'RestoredFromBackup', message: expect.stringContaining(`as of revision ${backup.etcdRevision}`) }));
  }, MINUTES);

  test('with no backup of the cluster, lost quorum is reported once and nothing is deleted', async () => {
    await createCluster(h, 'nobackup', { size: 3, restorePolicy: { afterQuorumLostSeconds: 5 } });
    await settledAt(h, 'nobackup', 3);
    const uid = (await readCluster(h, 'nobackup')).metadata.uid;

    await killMajority(h, 'nobackup');
    await waitFor(async () => (await eventsFor(h, 'nobackup')).some((e) => e.reason === 'NoBackupToRestore'), { what: 'the NoBackupToRestore Warning', timeoutMs: 60_000 });
    // Several more looks at the same standing problem (the settled look is 1 s here).
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    const cluster = await readCluster(h, 'nobackup');
    expect(cluster.metadata.uid).toBe(uid);
    expect(cluster.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Quorum', status: 'False', reason: 'QuorumLost' }));
    expect((await eventsFor(h, 'nobackup')).filter((e) => e.reason === 'NoBackupToRestore')).toEqual([expect.objectContaining({ count: 1 })]);
    await expect(h.api.request('GET', etcdObjectPath(h.namespace, 'etcdrestores', 'nobackup'))).rejects.toMatchObject({ status: 404 });
  }, MINUTES);
});
