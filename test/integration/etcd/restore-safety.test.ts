// A restore never loses the cluster, and its backup is served only to
// its own seed member, once, with the restore's token. Members are real etcd processes.
import { copyFile, mkdir, readFile, truncate } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { S3Storage } from '../../../src/handlers/etcd/storage/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import {
  allHealthy,
  createCluster,
  createEtcdObject,
  putKeys,
  readKey,
  etcdObjectPath,
  etcdStatus,
  installEtcdCrds,
  readCluster,
  settledAt,
  standaloneSnapshot,
  startEtcdOperator,
  type EtcdHarness,
} from '../../support/etcd.js';
import { startS3Server, type TestS3Server } from '../../support/s3-server.js';
import { waitFor } from '../../support/wait-for.js';

const MINUTES = 180_000;
const RESTORED_BY = 'etcd.database.coreos.com/restored-by';
const RESTORE_FROM = 'etcd.database.coreos.com/restore-from';

interface RestoreStatus {
  succeeded?: boolean;
  reason?: string;
  cluster?: { uid: string; spec: { size?: number } };
}

interface PodView {
  metadata: { name: string; uid: string };
  status?: { phase?: string };
}

async function oneShotBackup(h: EtcdHarness, cluster: string, path: string): Promise<string> {
  await createEtcdObject(h, 'EtcdBackup', `${cluster}-backup`, {
    etcdEndpoints: [`http://${cluster}-client:2379`],
    storageType: 'Local',
    local: { path },
  });
  await waitFor(
    async () =>
      (await etcdStatus<{ succeeded?: boolean }>(h, 'etcdbackups', `${cluster}-backup`))
        ?.succeeded === true,
    { what: 'the one-shot backup', timeoutMs: 60_000 },
  );
  return join(h.backupRoot, h.namespace, path);
}

async function pods(h: EtcdHarness, cluster: string): Promise<PodView[]> {
  return (
    await h.api.request<{ items: PodView[] }>('GET', `/api/v1/namespaces/${h.namespace}/pods`, {
      query: { labelSelector: `etcd_cluster=${cluster}` },
    })
  ).items;
}

async function clusterEvents(
  h: EtcdHarness,
  name: string,
): Promise<{ type: string; reason: string; message: string }[]> {
  const list = await h.api.request<{
    items: { type: string; reason: string; message: string; involvedObject: { kind: string } }[];
  }>('GET', `/api/v1/namespaces/${h.namespace}/events`, {
    query: { fieldSelector: `involvedObject.name=${name}` },
  });
  return list.items.filter((e) => e.involvedObject.kind === 'EtcdCluster');
}

describe('point 12: a restore never loses the cluster', () => {
  let h: EtcdHarness;
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'restore-safe'), {});
  }, MINUTES);
  afterAll(async () => {
    await h?.stop();
  });

  test(
    'a restore from a corrupt backup is refused before anything is deleted',
    async () => {
      await createCluster(h, 'corrupt', { size: 1 });
      await settledAt(h, 'corrupt', 1);
      const good = await oneShotBackup(h, 'corrupt', 'corrupt/good.db');
      const bad = join(h.backupRoot, h.namespace, 'corrupt/cut.db');
      await copyFile(good, bad);
      await truncate(bad, 4096);
      const uid = (await readCluster(h, 'corrupt')).metadata.uid;

      await createEtcdObject(h, 'EtcdRestore', 'corrupt', {
        etcdCluster: { name: 'corrupt' },
        backupStorageType: 'Local',
        local: { path: 'corrupt/cut.db' },
      });
      await waitFor(
        async () =>
          (await etcdStatus<RestoreStatus>(h, 'etcdrestores', 'corrupt'))?.reason !== undefined,
        { what: 'the restore to be refused', timeoutMs: 30_000 },
      );
      expect(await etcdStatus<RestoreStatus>(h, 'etcdrestores', 'corrupt')).toMatchObject({
        succeeded: false,
        reason: expect.stringContaining('SHA-256 trailer does not match'),
      });
      expect((await readCluster(h, 'corrupt')).metadata.uid).toBe(uid);
      expect(await allHealthy(h, 'corrupt')).toBe(true);
    },
    MINUTES,
  );

  test(
    'a restore interrupted while the cluster is slow to delete, across an operator restart, recreates the cluster from the spec recorded in status',
    async () => {
      await createCluster(h, 'slow', { size: 1 });
      await settledAt(h, 'slow', 1);
      await putKeys(h, 'slow', { 'in-backup': 'yes' });
      await oneShotBackup(h, 'slow', 'slow.db');
      const old = await readCluster(h, 'slow');
      // Someone else's finalizer holds the deletion past the restore's wait.
      await h.api.request('PATCH', etcdObjectPath(h.namespace, 'etcdclusters', 'slow'), {
        body: [{ op: 'add', path: '/metadata/finalizers/-', value: 'test.konductor.dev/hold' }],
        contentType: 'application/json-patch+json',
      });

      await createEtcdObject(h, 'EtcdRestore', 'slow', {
        etcdCluster: { name: 'slow' },
        backupStorageType: 'Local',
        local: { path: 'slow.db' },
      });
      await waitFor(
        async () =>
          (await etcdStatus<RestoreStatus>(h, 'etcdrestores', 'slow'))?.cluster?.uid ===
          old.metadata.uid,
        { what: 'the cluster spec recorded in status', timeoutMs: 30_000 },
      );
      await waitFor(
        async () =>
          (
            await h.api.request<{ metadata: { deletionTimestamp?: string } }>(
              'GET',
              etcdObjectPath(h.namespace, 'etcdclusters', 'slow'),
            )
          ).metadata.deletionTimestamp !== undefined,
        { what: 'the deletion to start', timeoutMs: 30_000 },
      );
      await h.restart();
      // The deletion completes while the new operator retries: only the status knows the spec now.
      const held = await h.api.request<{ metadata: { finalizers?: string[] } }>(
        'GET',
        etcdObjectPath(h.namespace, 'etcdclusters', 'slow'),
      );
      const index = held.metadata.finalizers!.indexOf('test.konductor.dev/hold');
      await h.api.request('PATCH', etcdObjectPath(h.namespace, 'etcdclusters', 'slow'), {
        body: [
          { op: 'test', path: `/metadata/finalizers/${index}`, value: 'test.konductor.dev/hold' },
          { op: 'remove', path: `/metadata/finalizers/${index}` },
        ],
        contentType: 'application/json-patch+json',
      });

      await waitFor(
        async () =>
          (await etcdStatus<RestoreStatus>(h, 'etcdrestores', 'slow'))?.succeeded === true,
        { what: 'the restore to finish', timeoutMs: 90_000 },
      );
      const fresh = await readCluster(h, 'slow');
      expect(fresh.metadata.uid).not.toBe(old.metadata.uid);
      expect(fresh.metadata.annotations?.[RESTORED_BY]).toBeDefined();
      expect(fresh.spec.size).toBe(1);
      await settledAt(h, 'slow', 1);
      await expect(readKey(h, 'slow', 'in-backup')).resolves.toBe('yes');
    },
    MINUTES,
  );
});

describe('point 12: a seed that cannot download its backup', () => {
  let h: EtcdHarness;
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    // Seeds are sent to a port where nothing listens: every download fails.
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'restore-nodl'), {
      restoreURL: 'http://127.0.0.1:1',
    });
  }, MINUTES);
  afterAll(async () => {
    await h?.stop();
  });

  test(
    'gets a Warning Event without the download token, and is retried with a growing back-off, not every tick',
    async () => {
      await createCluster(h, 'nodl', { size: 1 });
      await settledAt(h, 'nodl', 1);
      await oneShotBackup(h, 'nodl', 'nodl.db');
      await createEtcdObject(h, 'EtcdRestore', 'nodl', {
        etcdCluster: { name: 'nodl' },
        backupStorageType: 'Local',
        local: { path: 'nodl.db' },
      });
      await waitFor(
        async () =>
          (await etcdStatus<RestoreStatus>(h, 'etcdrestores', 'nodl'))?.succeeded === true,
        { what: 'the cluster to be recreated', timeoutMs: 60_000 },
      );

      const seeds = new Set<string>();
      const until = Date.now() + 14_000;
      while (Date.now() < until) {
        for (const pod of await pods(h, 'nodl')) seeds.add(pod.metadata.uid);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      // Attempts at about 0 s, 5 s and 15 s after the first failure; the old code made one every tick (1 s here).
      expect(seeds.size).toBeGreaterThanOrEqual(2);
      expect(seeds.size).toBeLessThanOrEqual(3);
      const warnings = (await clusterEvents(h, 'nodl')).filter(
        (e) => e.type === 'Warning' && e.reason === 'RestoreSeedFailed',
      );
      expect(warnings.length).toBeGreaterThanOrEqual(1);
      expect(warnings[0]!.message).toContain('fetch-backup');
      for (const event of await clusterEvents(h, 'nodl'))
        expect(event.message).not.toMatch(/token=[0-9a-f]/);
    },
    MINUTES,
  );
});

describe('point 10: the backup server serves one restore, once, to its own seed', () => {
  let h: EtcdHarness;
  let s3: TestS3Server;
  let trap: Server;
  let trapped = 0;
  let snapshot: Buffer;
  let url: string;
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    // No pod runner: member Pods stay Pending, so the seed waits for its backup as long as the test needs.
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'restore-serve'), { runPods: false });
    s3 = await startS3Server(['backups']);
    trap = createServer((_req, res) => {
      trapped++;
      res.writeHead(200).end('proxied');
    });
    await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));

    const file = join(h.backupRoot, 'snapshot.db');
    await mkdir(h.backupRoot, { recursive: true });
    await standaloneSnapshot(file, { 'in-backup': 'yes' });
    const storage = new S3Storage({
      bucket: 'backups',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: s3.credentials,
    });
    await storage.write('db.db', file);
    storage.destroy();
    snapshot = await readFile(file);

    await h.api.request('POST', `/api/v1/namespaces/${h.namespace}/secrets`, {
      body: {
        metadata: { name: 'aws' },
        stringData: {
          credentials: `[default]\naws_access_key_id = ${s3.credentials.accessKeyId}\naws_secret_access_key = ${s3.credentials.secretAccessKey}\n`,
        },
      },
    });
    await createCluster(h, 'db', { size: 1 });
    await createEtcdObject(h, 'EtcdRestore', 'db', {
      etcdCluster: { name: 'db' },
      backupStorageType: 'S3',
      s3: { path: 'backups/db.db', awsSecret: 'aws', endpoint: s3.endpoint, forcePathStyle: true },
    });
    await waitFor(
      async () => {
        const cluster = await h.api
          .request<{ metadata: { annotations?: Record<string, string> } }>(
            'GET',
            etcdObjectPath(h.namespace, 'etcdclusters', 'db'),
          )
          .catch(() => undefined);
        url = cluster?.metadata.annotations?.[RESTORE_FROM] ?? '';
        return (
          url !== '' &&
          (await pods(h, 'db')).some((p) => (p.status?.phase ?? 'Pending') === 'Pending')
        );
      },
      { what: 'the recreated cluster and its pending seed', timeoutMs: 60_000 },
    );
  }, MINUTES);
  afterAll(async () => {
    await h?.stop();
    await s3?.stop();
    trap?.close();
  });

  test('the seed URL carries a token; without it: 403', async () => {
    expect(new URL(url).searchParams.get('token')).toMatch(/^[0-9a-f]{64}$/);
    const bare = url.replace(/\?.*$/, '');
    expect((await fetch(bare)).status).toBe(403);
    expect((await fetch(`${bare}?token=${'0'.repeat(64)}`)).status).toBe(403);
  });

  test('with the token, the backup as it was when the restore was created, even after s3.endpoint was edited, and only once', async () => {
    await h.api.request('PATCH', etcdObjectPath(h.namespace, 'etcdrestores', 'db'), {
      body: {
        spec: { s3: { endpoint: `http://127.0.0.1:${(trap.address() as AddressInfo).port}` } },
      },
      contentType: 'application/merge-patch+json',
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(snapshot)).toBe(true);
    expect(trapped).toBe(0);
    expect((await fetch(url)).status).toBe(404);
  });

  test('after the restore (the seed has started): 404, even with the token', async () => {
    const [seed] = await pods(h, 'db');
    // As a kubelet reports a seed whose init containers finished.
    await h.api.request(
      'PATCH',
      `/api/v1/namespaces/${h.namespace}/pods/${seed!.metadata.name}/status`,
      {
        body: { status: { phase: 'Running' } },
        contentType: 'application/merge-patch+json',
      },
    );
    expect((await fetch(url)).status).toBe(404);
  });
});
