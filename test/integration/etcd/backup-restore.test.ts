import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseBackupName, S3Storage } from '../../../src/handlers/etcd/storage/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import {
  ETCD_API,
  createCluster,
  installEtcdCrds,
  putKeys,
  readKey,
  readCluster,
  settledAt,
  startEtcdOperator,
  type EtcdHarness,
} from '../../support/etcd.js';
import { startS3Server, type TestS3Server } from '../../support/s3-server.js';
import { waitFor } from '../../support/wait-for.js';

const run = promisify(execFile);
const MINUTES = 180_000;

interface BackupStatus {
  succeeded?: boolean;
  Reason?: string;
  etcdVersion?: string;
  etcdRevision?: number;
  lastSuccessDate?: string;
  lastBackup?: string;
}

async function createObject(
  h: EtcdHarness,
  plural: string,
  kind: string,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await h.api.request('POST', `/apis/${ETCD_API}/namespaces/${h.namespace}/${plural}`, {
    body: { apiVersion: ETCD_API, kind, metadata: { name }, spec },
  });
}

async function statusOf<T>(h: EtcdHarness, plural: string, name: string): Promise<T | undefined> {
  const object = await h.api.request<{ status?: T }>(
    'GET',
    `/apis/${ETCD_API}/namespaces/${h.namespace}/${plural}/${name}`,
  );
  return object.status;
}

/** `etcdctl snapshot status` of a file: the revision and key count it holds. */
async function snapshotStatus(file: string): Promise<{ revision: number; totalKey: number }> {
  const { stdout } = await run('etcdctl', ['snapshot', 'status', file, '-w', 'json'], {
    env: { ...process.env, ETCDCTL_API: '3' },
  });
  return JSON.parse(stdout) as { revision: number; totalKey: number };
}

/** The backups in a folder, without the owner file each has beside it. */
async function backupFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => !f.endsWith('.konductor-owner')).sort();
}

describe('EtcdBackup and EtcdRestore on real etcd processes', () => {
  let h: EtcdHarness;
  let s3: TestS3Server;
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'backup'));
    s3 = await startS3Server(['backups']);
    await createCluster(h, 'source', { size: 1 });
    await settledAt(h, 'source', 1);
    await putKeys(h, 'source', { 'before-backup': 'kept' });
  }, MINUTES);
  afterAll(async () => {
    await h?.stop();
    await s3?.stop();
  });

  test(
    'a periodic backup every 2 s with maxBackups 3 keeps the 3 newest snapshots, each a valid snapshot of its revision',
    async () => {
      await createObject(h, 'etcdbackups', 'EtcdBackup', 'every-2s', {
        etcdEndpoints: ['http://source-client:2379'],
        storageType: 'Local',
        local: { path: 'every-2s/source' },
        backupPolicy: { backupIntervalInSecond: 2, maxBackups: 3 },
      });
      const seen = new Set<string>();
      let lastStatus: BackupStatus | undefined;
      await waitFor(
        async () => {
          lastStatus = await statusOf<BackupStatus>(h, 'etcdbackups', 'every-2s');
          if (lastStatus?.lastBackup && !seen.has(lastStatus.lastBackup)) {
            seen.add(lastStatus.lastBackup);
            // Right after a backup, so the next one holds a new revision (and no write races a snapshot).
            await putKeys(h, 'source', { moving: String(Date.now()) });
          }
          return seen.size >= 5;
        },
        { what: 'five backups to be taken', timeoutMs: 60_000 },
      );
      // Deleting the EtcdBackup stops its timer; then the listing holds still.
      await h.api.request(
        'DELETE',
        `/apis/${ETCD_API}/namespaces/${h.namespace}/etcdbackups/every-2s`,
      );
      const dir = join(h.backupRoot, h.namespace, 'every-2s');
      let files: string[] = [];
      await waitFor(
        async () => {
          const before = (await backupFiles(dir)).join();
          await new Promise((resolve) => setTimeout(resolve, 2_500));
          files = await backupFiles(dir);
          return files.join() === before;
        },
        { what: 'the backup folder to hold still', timeoutMs: 30_000 },
      );
      expect(files).toHaveLength(3);
      // The newest are kept: every backup seen that is newer than the oldest kept one is still there.
      const at = (name: string): number => parseBackupName('every-2s/source', name)!.at.getTime();
      const kept = files.map((f) => `every-2s/${f}`);
      const oldestKept = Math.min(...kept.map(at));
      const seenNames = [...seen].map((path) => `every-2s/${path.split('/').pop()}`);
      for (const name of seenNames.filter((n) => at(n) > oldestKept)) expect(kept).toContain(name);
      const status =
        (await statusOf<BackupStatus>(h, 'etcdbackups', 'every-2s').catch(() => undefined)) ??
        lastStatus;
      expect(status).toMatchObject({ succeeded: true, etcdVersion: '3.4.23' });
      expect(status?.etcdRevision).toBeGreaterThan(0);
      expect(Date.now() - Date.parse(status!.lastSuccessDate!)).toBeLessThan(60_000);
      for (const file of files) {
        const revision = Number(/_v(\d+)_/.exec(file)![1]);
        await expect(snapshotStatus(join(dir, file))).resolves.toMatchObject({ revision });
      }
    },
    MINUTES,
  );

  test(
    'a restore from a Local backup brings back the keys written before it and scales back to size',
    async () => {
      await createCluster(h, 'restored', { size: 3 });
      await settledAt(h, 'restored', 3);
      await putKeys(h, 'restored', { 'in-backup': 'yes' });
      await createObject(h, 'etcdbackups', 'EtcdBackup', 'restored-once', {
        etcdEndpoints: ['http://restored-client:2379'],
        storageType: 'Local',
        local: { path: 'one-shot/restored.db' },
      });
      await waitFor(
        async () =>
          (await statusOf<BackupStatus>(h, 'etcdbackups', 'restored-once'))?.succeeded === true,
        { what: 'the one-shot backup', timeoutMs: 30_000 },
      );
      await putKeys(h, 'restored', { 'after-backup': 'lost' });
      const oldUid = (await readCluster(h, 'restored')).metadata.uid;

      await createObject(h, 'etcdrestores', 'EtcdRestore', 'restored', {
        etcdCluster: { name: 'restored' },
        backupStorageType: 'Local',
        local: { path: 'one-shot/restored.db' },
      });
      await waitFor(
        async () =>
          (await statusOf<{ succeeded?: boolean }>(h, 'etcdrestores', 'restored'))?.succeeded ===
          true,
        { what: 'the restore to succeed', timeoutMs: 90_000 },
      );
      await waitFor(
        async () =>
          (await readCluster(h, 'restored').catch(() => undefined))?.metadata.uid !== oldUid,
        { what: 'a new cluster object', timeoutMs: 30_000 },
      );
      await settledAt(h, 'restored', 3);

      await expect(readKey(h, 'restored', 'in-backup')).resolves.toBe('yes');
      await expect(readKey(h, 'restored', 'after-backup')).resolves.toBeNull();
    },
    MINUTES,
  );

  test(
    'S3 storage: periodic backups keep maxBackups objects, and a restore from the newest brings the data back',
    async () => {
      await h.api.request('POST', `/api/v1/namespaces/${h.namespace}/secrets`, {
        body: {
          metadata: { name: 'aws' },
          stringData: {
            credentials: `[default]\naws_access_key_id = ${s3.credentials.accessKeyId}\naws_secret_access_key = ${s3.credentials.secretAccessKey}\n`,
          },
        },
      });
      const s3Spec = { awsSecret: 'aws', endpoint: s3.endpoint, forcePathStyle: true };
      await createObject(h, 'etcdbackups', 'EtcdBackup', 'to-s3', {
        etcdEndpoints: ['http://source-client:2379'],
        storageType: 'S3',
        s3: { ...s3Spec, path: 'backups/source' },
        backupPolicy: { backupIntervalInSecond: 2, maxBackups: 2 },
      });
      const seen = new Set<string>();
      await waitFor(
        async () => {
          const last = (await statusOf<BackupStatus>(h, 'etcdbackups', 'to-s3'))?.lastBackup;
          if (last) seen.add(last);
          return seen.size >= 4;
        },
        { what: 'four backups to S3', timeoutMs: 60_000 },
      );
      await h.api.request(
        'DELETE',
        `/apis/${ETCD_API}/namespaces/${h.namespace}/etcdbackups/to-s3`,
      );
      const storage = new S3Storage({
        bucket: 'backups',
        endpoint: s3.endpoint,
        forcePathStyle: true,
        credentials: s3.credentials,
      });
      const objects = await storage.list('source_v');
      storage.destroy();
      expect(objects).toHaveLength(2);
      const newest = objects
        .map((o) => o.name)
        .sort()
        .pop()!;

      await putKeys(h, 'source', { 'after-s3-backup': 'lost' });
      await createObject(h, 'etcdrestores', 'EtcdRestore', 'source', {
        etcdCluster: { name: 'source' },
        backupStorageType: 'S3',
        s3: { ...s3Spec, path: `backups/${newest}` },
      });
      await waitFor(
        async () =>
          (await statusOf<{ succeeded?: boolean }>(h, 'etcdrestores', 'source'))?.succeeded ===
          true,
        { what: 'the restore from S3', timeoutMs: 90_000 },
      );
      await waitFor(
        async () =>
          (await readCluster(h, 'source').catch(() => undefined))?.metadata.annotations?.[
            'etcd.database.coreos.com/restored-by'
          ] !== undefined,
        { what: 'the recreated cluster', timeoutMs: 30_000 },
      );
      await settledAt(h, 'source', 1);
      await expect(readKey(h, 'source', 'before-backup')).resolves.toBe('kept');
      await expect(readKey(h, 'source', 'after-s3-backup')).resolves.toBeNull();
    },
    MINUTES,
  );
});
