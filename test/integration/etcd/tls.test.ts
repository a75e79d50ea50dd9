// spec.TLS.static on real etcd processes: members talk TLS to each other and to clients, the
// operator's own client, backups and restores present the operator Secret, and a certificate change
// rolls the members one at a time.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import {
  clientURLs,
  clusterPath,
  createCluster,
  createEtcdObject,
  etcdStatus,
  eventsFor,
  installEtcdCrds,
  memberList,
  putKeys,
  readCluster,
  readKey,
  setSize,
  settledAt,
  startEtcdOperator,
  useClientTLS,
  type ClientTLSFiles,
  type EtcdHarness,
} from '../../support/etcd.js';
import {
  applyTLSSecrets,
  issueEtcdTLS,
  TLS_SPEC,
  tlsSecrets,
  type EtcdTLS,
} from '../../support/etcd-tls.js';
import { waitFor } from '../../support/wait-for.js';

const run = promisify(execFile);
const MINUTES = 240_000;

interface PodView {
  metadata: { name: string; annotations?: Record<string, string> };
  status?: { phase?: string };
}

let h: EtcdHarness;
let dir: string;

beforeAll(async () => {
  const kc = sharedKubeConfig();
  await installEtcdCrds(kc);
  h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd-tls'));
  dir = mkdtempSync(join(tmpdir(), 'konductor-etcd-tls-'));
}, 60_000);
afterAll(async () => {
  await h?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Writes the operator's client certificate to files, for etcdctl and the specs' own client. */
function clientFiles(tls: EtcdTLS, name: string): ClientTLSFiles {
  const files = {
    cert: join(dir, `${name}.crt`),
    key: join(dir, `${name}.key`),
    ca: join(dir, `${name}-ca.crt`),
  };
  writeFileSync(files.cert, tls.client.cert);
  writeFileSync(files.key, tls.client.key);
  writeFileSync(files.ca, tls.ca.cert);
  return files;
}

async function pods(cluster: string): Promise<PodView[]> {
  const list = await h.api.request<{ items: PodView[] }>(
    'GET',
    `/api/v1/namespaces/${h.namespace}/pods`,
    { query: { labelSelector: `app=etcd,etcd_cluster=${cluster}` } },
  );
  return list.items;
}

/** A TLS cluster of `size` with the given certificates, settled. */
async function tlsCluster(name: string, size: number, tls: EtcdTLS): Promise<void> {
  useClientTLS(h, name, clientFiles(tls, name));
  await createCluster(h, name, { size, TLS: TLS_SPEC });
  await settledAt(h, name, size);
}

describe('an EtcdCluster with spec.TLS.static', () => {
  let tls: EtcdTLS;

  beforeAll(async () => {
    tls = await issueEtcdTLS(h.namespace, 'secure');
    await applyTLSSecrets(h.api, h.namespace, tls);
    await tlsCluster('secure', 3, tls);
  }, MINUTES);

  test('advertises https peer and client URLs for every member', async () => {
    const { stdout } = await run(
      'etcdctl',
      [
        '--endpoints',
        clientURLs(h, 'secure').join(','),
        '--cert',
        join(dir, 'secure.crt'),
        '--key',
        join(dir, 'secure.key'),
        '--cacert',
        join(dir, 'secure-ca.crt'),
        'member',
        'list',
        '-w',
        'json',
      ],
      {
        env: { ...process.env, ETCDCTL_API: '3' },
      },
    );
    const members = (
      JSON.parse(stdout) as { members: { peerURLs: string[]; clientURLs: string[] }[] }
    ).members;
    expect(members).toHaveLength(3);
    for (const member of members) {
      expect(member.peerURLs.every((url) => url.startsWith('https://'))).toBe(true);
      expect(member.clientURLs.every((url) => url.startsWith('https://'))).toBe(true);
    }
  });

  test('serves the client certificate holder, and refuses a client without one', async () => {
    await putKeys(h, 'secure', { greeting: 'over tls' });
    await expect(readKey(h, 'secure', 'greeting')).resolves.toBe('over tls');
    const anonymous = run(
      'etcdctl',
      [
        '--endpoints',
        clientURLs(h, 'secure')[0]!,
        '--cacert',
        join(dir, 'secure-ca.crt'),
        '--command-timeout',
        '3s',
        'get',
        'greeting',
      ],
      { env: { ...process.env, ETCDCTL_API: '3' } },
    );
    await expect(anonymous).rejects.toThrow();
    const plain = run(
      'etcdctl',
      [
        '--endpoints',
        clientURLs(h, 'secure')[0]!.replace('https:', 'http:'),
        '--command-timeout',
        '3s',
        'get',
        'greeting',
      ],
      { env: { ...process.env, ETCDCTL_API: '3' } },
    );
    await expect(plain).rejects.toThrow();
  });

  test(
    'a backup presents the operator Secret, and a restore brings the data back into a TLS cluster',
    async () => {
      await createEtcdObject(h, 'EtcdBackup', 'secure-once', {
        etcdEndpoints: ['https://secure-client:2379'],
        storageType: 'Local',
        local: { path: 'secure/once.db' },
      });
      await waitFor(
        async () =>
          (await etcdStatus<{ succeeded?: boolean }>(h, 'etcdbackups', 'secure-once'))
            ?.succeeded === true,
        { what: 'the backup of the TLS cluster', timeoutMs: 60_000 },
      );
      await putKeys(h, 'secure', { later: 'not in the backup' });
      const oldUid = (await readCluster(h, 'secure')).metadata.uid;

      await createEtcdObject(h, 'EtcdRestore', 'secure', {
        etcdCluster: { name: 'secure' },
        backupStorageType: 'Local',
        local: { path: 'secure/once.db' },
      });
      await waitFor(
        async () =>
          (await etcdStatus<{ succeeded?: boolean }>(h, 'etcdrestores', 'secure'))?.succeeded ===
          true,
        { what: 'the restore', timeoutMs: 120_000 },
      );
      await waitFor(
        async () =>
          (await readCluster(h, 'secure').catch(() => undefined))?.metadata.uid !== oldUid,
        { what: 'the recreated cluster', timeoutMs: 30_000 },
      );
      await settledAt(h, 'secure', 3);

      expect((await readCluster(h, 'secure')).spec).toMatchObject({ TLS: TLS_SPEC });
      await expect(readKey(h, 'secure', 'greeting')).resolves.toBe('over tls');
      await expect(readKey(h, 'secure', 'later')).resolves.toBeNull();
    },
    MINUTES,
  );

  test(
    'new certificates in the Secrets roll the members one at a time, never with fewer than 3 running, data intact',
    async () => {
      const before = new Set((await pods('secure')).map((p) => p.metadata.name));
      const digestBefore = (await pods('secure'))[0]!.metadata.annotations?.[
        'etcd.database.coreos.com/tls-digest'
      ];
      // The same CA, new leaf certificates: clients that trust the CA notice nothing.
      const renewed = await issueEtcdTLS(h.namespace, 'secure', tls.ca);
      let fewest = Infinity;
      let most = 0;
      await applyTLSSecrets(h.api, h.namespace, renewed);
      await waitFor(
        async () => {
          const now = await pods('secure');
          const running = now.filter((p) => p.status?.phase === 'Running').length;
          fewest = Math.min(fewest, running);
          most = Math.max(most, now.length);
          const status = (await readCluster(h, 'secure')).status;
          return (
            now.length === 3 &&
            now.every((p) => !before.has(p.metadata.name)) &&
            status?.conditions?.find((c) => c.type === 'Rolling')?.status !== 'True' &&
            status?.phase === 'Running'
          );
        },
        {
          what: 'every member to be replaced by one with the new certificates',
          timeoutMs: 180_000,
          intervalMs: 100,
        },
      ).catch(async (error: unknown) => {
        const now = await pods('secure');
        const status = (await readCluster(h, 'secure')).status;
        throw new Error(
          `${(error as Error).message}; Pods ${JSON.stringify(now.map((p) => [p.metadata.name, p.status?.phase, p.metadata.annotations?.['etcd.database.coreos.com/tls-digest']]))}; status ${JSON.stringify(status)}; events ${JSON.stringify((await eventsFor(h, 'secure')).map((e) => e.message).slice(-8))}`,
          { cause: error },
        );
      });
      await settledAt(h, 'secure', 3);
      expect(fewest).toBeGreaterThanOrEqual(3);
      expect(most).toBeLessThanOrEqual(4);
      const after = await pods('secure');
      expect(
        new Set(after.map((p) => p.metadata.annotations?.['etcd.database.coreos.com/tls-digest']))
          .size,
      ).toBe(1);
      expect(after[0]!.metadata.annotations?.['etcd.database.coreos.com/tls-digest']).not.toBe(
        digestBefore,
      );
      await expect(readKey(h, 'secure', 'greeting')).resolves.toBe('over tls');
    },
    MINUTES,
  );
});

describe('TLS Secrets that are not there or not usable', () => {
  test(
    'a missing operator Secret is one Warning Event and a status reason naming it; no member starts until it exists',
    async () => {
      const name = 'nosecret';
      const tls = await issueEtcdTLS(h.namespace, name);
      const spec = {
        static: {
          member: { peerSecret: 'np-peer', serverSecret: 'np-server' },
          operatorSecret: 'np-client',
        },
      };
      useClientTLS(h, name, clientFiles(tls, name));
      await createCluster(h, name, { size: 1, TLS: spec });
      await waitFor(
        async () => (await readCluster(h, name)).status?.reason?.includes('Secret') === true,
        { what: 'the status to name the missing Secret', timeoutMs: 30_000 },
      );
      const status = (await readCluster(h, name)).status!;
      expect(status.reason).toMatch(
        new RegExp(
          `Secret ${h.namespace}/np-peer \\(spec.TLS.static.member.peerSecret\\) does not exist`,
        ),
      );
      expect(await pods(name)).toEqual([]);
      const warnings = (await eventsFor(h, name)).filter((e) => e.reason === 'InvalidTLS');
      expect(warnings).toHaveLength(1);

      const secrets = h.api.resource<{
        apiVersion: string;
        kind: string;
        metadata: { name: string; namespace: string };
        data: Record<string, string>;
      }>('v1', 'secrets');
      const b64 = (text: string): string => Buffer.from(text).toString('base64');
      await secrets.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'np-peer', namespace: h.namespace },
        data: {
          'peer-ca.crt': b64(tls.ca.cert),
          'peer.crt': b64(tls.peer.cert),
          'peer.key': b64(tls.peer.key),
        },
      });
      await secrets.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'np-server', namespace: h.namespace },
        data: {
          'server-ca.crt': b64(tls.ca.cert),
          'server.crt': b64(tls.server.cert),
          'server.key': b64(tls.server.key),
        },
      });
      await secrets.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'np-client', namespace: h.namespace },
        data: {
          'etcd-client-ca.crt': b64(tls.ca.cert),
          'etcd-client.crt': b64(tls.client.cert),
          'etcd-client.key': b64(tls.peer.key),
        },
      });
      await waitFor(
        async () => (await readCluster(h, name)).status?.reason?.includes('np-client') === true,
        { what: 'the mismatched client key to be named', timeoutMs: 60_000 },
      );
      expect((await readCluster(h, name)).status!.reason).toContain(
        'etcd-client.key is not the private key of the certificate',
      );
      await secrets.patch(
        { namespace: h.namespace, name: 'np-client' },
        { data: { 'etcd-client.key': b64(tls.client.key) } },
      );
      await settledAt(h, name, 1, { timeoutMs: 90_000 });
    },
    MINUTES,
  );

  test(
    'a restore whose recreated cluster could not start (its TLS Secret is gone) leaves the cluster alone and says why',
    async () => {
      const name = 'keep';
      const tls = await issueEtcdTLS(h.namespace, name);
      const spec = {
        static: {
          member: { peerSecret: 'keep-peer', serverSecret: 'keep-server' },
          operatorSecret: 'keep-client',
        },
      };
      const secrets = h.api.resource<{
        apiVersion: string;
        kind: string;
        metadata: { name: string; namespace: string };
        data: Record<string, string>;
      }>('v1', 'secrets');
      for (const [secret, data] of tlsSecrets(tls).map(
        (s, i) => [['keep-peer', 'keep-server', 'keep-client'][i]!, s.data] as const,
      )) {
        await secrets.create({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: secret, namespace: h.namespace },
          data,
        });
      }
      useClientTLS(h, name, clientFiles(tls, name));
      await createCluster(h, name, { size: 1, TLS: spec });
      await settledAt(h, name, 1);
      await createEtcdObject(h, 'EtcdBackup', 'keep-once', {
        etcdEndpoints: ['https://keep-client:2379'],
        storageType: 'Local',
        local: { path: 'keep/once.db' },
      });
      await waitFor(
        async () =>
          (await etcdStatus<{ succeeded?: boolean }>(h, 'etcdbackups', 'keep-once'))?.succeeded ===
          true,
        { what: 'the backup', timeoutMs: 60_000 },
      );
      const uid = (await readCluster(h, name)).metadata.uid;
      await secrets.delete({ namespace: h.namespace, name: 'keep-client' });

      await createEtcdObject(h, 'EtcdRestore', name, {
        etcdCluster: { name },
        backupStorageType: 'Local',
        local: { path: 'keep/once.db' },
      });
      await waitFor(
        async () =>
          ((await etcdStatus<{ reason?: string }>(h, 'etcdrestores', name))?.reason ?? '').includes(
            'keep-client',
          ),
        { what: 'the restore to name the missing Secret', timeoutMs: 30_000 },
      );
      expect((await etcdStatus<{ reason?: string }>(h, 'etcdrestores', name))!.reason).toMatch(
        /was left alone: .*Secret .*\/keep-client \(spec.TLS.static.operatorSecret\) does not exist/,
      );
      expect((await readCluster(h, name)).metadata.uid).toBe(uid);
    },
    MINUTES,
  );

  test(
    'adding TLS to a running plain cluster gets one Warning; its members stay as they are and are still managed, as plain members',
    async () => {
      const name = 'plain';
      await createCluster(h, name, { size: 1 });
      await settledAt(h, name, 1);
      const before = (await memberList(h, name)).map((m) => m.name);
      await h.api.request('PATCH', clusterPath(h.namespace, name), {
        body: { spec: { TLS: TLS_SPEC } },
        contentType: 'application/merge-patch+json',
      });
      await waitFor(
        async () => (await eventsFor(h, name)).some((e) => e.reason === 'TLSChangeRefused'),
        { what: 'the refusal', timeoutMs: 30_000 },
      );
      expect(
        (await eventsFor(h, name)).find((e) => e.reason === 'TLSChangeRefused')!.message,
      ).toMatch(/asks for TLS for peer and server but the members run with no TLS/);
      expect((await pods(name)).map((p) => p.metadata.name)).toEqual(before);
      expect((await readCluster(h, name)).status).toMatchObject({ tlsMode: 'none' });
      await setSize(h, name, 2);
      await settledAt(h, name, 2);
      expect(
        (await eventsFor(h, name)).filter((e) => e.reason === 'TLSChangeRefused'),
      ).toHaveLength(1);
    },
    MINUTES,
  );
});
