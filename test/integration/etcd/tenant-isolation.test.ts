// A tenant who can create EtcdClusters, EtcdBackups and EtcdRestores
// in one namespace can neither read, change nor delete another namespace's clusters or backups.
// One operator serves two tenant namespaces, as in a shared installation; members are real etcd processes.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiError } from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import {
  ETCD_API,
  createEtcdObject,
  etcdObjectPath,
  etcdStatus,
  installEtcdCrds,
  startEtcdOperator,
  type EtcdHarness,
} from '../../support/etcd.js';
import { waitFor } from '../../support/wait-for.js';

const MINUTES = 180_000;

interface BackupStatus {
  succeeded?: boolean;
  Reason?: string;
  lastBackup?: string;
}

interface EventView {
  type: string;
  reason: string;
  message: string;
  count?: number;
}

async function clusterUid(h: EtcdHarness, namespace: string, name: string): Promise<string> {
  return (
    await h.api.request<{ metadata: { uid: string } }>(
      'GET',
      etcdObjectPath(namespace, 'etcdclusters', name),
    )
  ).metadata.uid;
}

async function runningCluster(h: EtcdHarness, namespace: string, name: string): Promise<void> {
  await h.api.request('POST', etcdObjectPath(namespace, 'etcdclusters'), {
    body: { apiVersion: ETCD_API, kind: 'EtcdCluster', metadata: { name }, spec: { size: 1 } },
  });
  await waitFor(
    async () =>
      (await etcdStatus<{ phase?: string }>(h, 'etcdclusters', name, namespace))?.phase ===
      'Running',
    { what: `${namespace}/${name} to run`, timeoutMs: 90_000 },
  );
}

/** The backup's status once it has an outcome. */
async function outcome(h: EtcdHarness, namespace: string, name: string): Promise<BackupStatus> {
  let status: BackupStatus | undefined;
  await waitFor(
    async () => {
      status = await etcdStatus<BackupStatus>(h, 'etcdbackups', name, namespace);
      return status?.succeeded !== undefined;
    },
    { what: `an outcome of EtcdBackup ${namespace}/${name}`, timeoutMs: 60_000 },
  );
  return status!;
}

async function warnings(
  h: EtcdHarness,
  namespace: string,
  name: string,
  reason: string,
): Promise<EventView[]> {
  const list = await h.api.request<{ items: EventView[] }>(
    'GET',
    `/api/v1/namespaces/${namespace}/events`,
    { query: { fieldSelector: `involvedObject.name=${name}` } },
  );
  return list.items.filter((e) => e.type === 'Warning' && e.reason === reason);
}

const sha256 = async (file: string): Promise<string> =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

describe('two tenant namespaces on one etcd operator', () => {
  let h: EtcdHarness;
  let a: string;
  let b: string;
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    a = await uniqueNamespace(kc, 'tenant-a');
    b = await uniqueNamespace(kc, 'tenant-b');
    h = await startEtcdOperator(kc, a, { extraNamespaces: [b] });
    await Promise.all([runningCluster(h, a, 'db'), runningCluster(h, b, 'db')]);
    await createEtcdObject(
      h,
      'EtcdBackup',
      'snap',
      {
        etcdEndpoints: ['http://db-client:2379'],
        storageType: 'Local',
        local: { path: 'shared/db.db' },
      },
      a,
    );
    expect(await outcome(h, a, 'snap')).toMatchObject({ succeeded: true });
  }, MINUTES);
  afterAll(async () => {
    await h?.stop();
  });

  describe('point 9: an EtcdRestore restores only the cluster its name says', () => {
    test('the CRD refuses an etcdCluster.name that is a path into another namespace, with 422', async () => {
      const error = await createEtcdObject(
        h,
        'EtcdRestore',
        'db',
        {
          etcdCluster: { name: `../../${a}/etcdclusters/db` },
          backupStorageType: 'Local',
          local: { path: 'x.db' },
        },
        b,
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(422);
      expect((error as ApiError).message).toContain('spec.etcdCluster.name');
    });

    test('an EtcdRestore not named after its cluster is refused with a reason and a Warning Event, and the cluster is left alone', async () => {
      const before = await clusterUid(h, a, 'db');
      await createEtcdObject(
        h,
        'EtcdRestore',
        'not-db',
        {
          etcdCluster: { name: 'db' },
          backupStorageType: 'Local',
          local: { path: 'shared/db.db' },
        },
        a,
      );
      await waitFor(
        async () =>
          (await etcdStatus<{ reason?: string }>(h, 'etcdrestores', 'not-db', a))?.reason !==
          undefined,
        { what: 'the restore to be refused', timeoutMs: 30_000 },
      );
      expect(
        await etcdStatus<{ reason?: string; succeeded?: boolean }>(h, 'etcdrestores', 'not-db', a),
      ).toMatchObject({
        succeeded: false,
        reason: expect.stringContaining("must equal the EtcdRestore's own name"),
      });
      expect(await warnings(h, a, 'not-db', 'InvalidSpec')).toHaveLength(1);
      expect(await clusterUid(h, a, 'db')).toBe(before);
    }, 60_000);
  });

  describe('point 11: Local backups are per namespace', () => {
    test('a Local backup goes to <root>/<namespace>/<path>, and its status says so', async () => {
      const status = await etcdStatus<BackupStatus>(h, 'etcdbackups', 'snap', a);
      expect(status?.lastBackup).toBe(join(h.backupRoot, a, 'shared/db.db'));
      expect(await readdir(join(h.backupRoot, a, 'shared'))).toContain('db.db');
    });

    test('another namespace writing the same path gets a file of its own; the first is unchanged', async () => {
      const file = join(h.backupRoot, a, 'shared/db.db');
      const before = await sha256(file);
      await createEtcdObject(
        h,
        'EtcdBackup',
        'snap',
        {
          etcdEndpoints: ['http://db-client:2379'],
          storageType: 'Local',
          local: { path: 'shared/db.db' },
        },
        b,
      );
      expect(await outcome(h, b, 'snap')).toMatchObject({
        succeeded: true,
        lastBackup: join(h.backupRoot, b, 'shared/db.db'),
      });
      expect(await sha256(file)).toBe(before);
    }, 90_000);

    test('a path climbing out of the namespace folder is refused', async () => {
      await createEtcdObject(
        h,
        'EtcdBackup',
        'climb',
        {
          etcdEndpoints: ['http://db-client:2379'],
          storageType: 'Local',
          local: { path: `../${a}/shared/db.db` },
        },
        b,
      );
      expect(await outcome(h, b, 'climb')).toMatchObject({
        succeeded: false,
        Reason: expect.stringContaining('climbs out'),
      });
    }, 90_000);

    test('a backup never overwrites a file another EtcdBackup wrote', async () => {
      const file = join(h.backupRoot, a, 'shared/db.db');
      const before = await sha256(file);
      await createEtcdObject(
        h,
        'EtcdBackup',
        'snap-two',
        {
          etcdEndpoints: ['http://db-client:2379'],
          storageType: 'Local',
          local: { path: 'shared/db.db' },
        },
        a,
      );
      expect(await outcome(h, a, 'snap-two')).toMatchObject({
        succeeded: false,
        Reason: expect.stringContaining('already exists and was written by EtcdBackup snap'),
      });
      expect(await sha256(file)).toBe(before);
    }, 90_000);

    test("another namespace cannot restore from the first one's backup, and its cluster is left alone", async () => {
      await createEtcdObject(
        h,
        'EtcdBackup',
        'only-a',
        {
          etcdEndpoints: ['http://db-client:2379'],
          storageType: 'Local',
          local: { path: 'only-a/db.db' },
        },
        a,
      );
      expect(await outcome(h, a, 'only-a')).toMatchObject({ succeeded: true });
      const before = await clusterUid(h, b, 'db');
      await createEtcdObject(
        h,
        'EtcdRestore',
        'db',
        {
          etcdCluster: { name: 'db' },
          backupStorageType: 'Local',
          local: { path: 'only-a/db.db' },
        },
        b,
      );
      await waitFor(
        async () =>
          (await etcdStatus<{ reason?: string }>(h, 'etcdrestores', 'db', b))?.reason !== undefined,
        { what: 'the restore to be refused', timeoutMs: 30_000 },
      );
      expect(await etcdStatus<{ reason?: string }>(h, 'etcdrestores', 'db', b)).toMatchObject({
        reason: expect.stringMatching(/does not exist/),
      });
      expect(await clusterUid(h, b, 'db')).toBe(before);
    }, 90_000);

    test(
      'two periodic backups on one prefix each prune only their own files',
      async () => {
        for (const name of ['p-one', 'p-two']) {
          await createEtcdObject(
            h,
            'EtcdBackup',
            name,
            {
              etcdEndpoints: ['http://db-client:2379'],
              storageType: 'Local',
              local: { path: 'periodic/db' },
              backupPolicy: { backupIntervalInSecond: 1, maxBackups: 1 },
            },
            a,
          );
        }
        const seen = { 'p-one': new Set<string>(), 'p-two': new Set<string>() };
        await waitFor(
          async () => {
            for (const name of ['p-one', 'p-two'] as const) {
              const last = (await etcdStatus<BackupStatus>(h, 'etcdbackups', name, a))?.lastBackup;
              if (last) seen[name].add(last);
            }
            return seen['p-one'].size >= 3 && seen['p-two'].size >= 3;
          },
          { what: 'three backups each', timeoutMs: 60_000 },
        );
        for (const name of ['p-one', 'p-two'])
          await h.api.request('DELETE', etcdObjectPath(a, 'etcdbackups', name));
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        const files = (await readdir(join(h.backupRoot, a, 'periodic'))).filter(
          (f) => !f.endsWith('.konductor-owner'),
        );
        // maxBackups 1 each: one file of each remains (the old code pruned across both and kept one).
        expect(files.length).toBeGreaterThanOrEqual(2);
        const last = (name: 'p-one' | 'p-two'): string => [...seen[name]].pop()!.split('/').pop()!;
        expect(files).toEqual(expect.arrayContaining([last('p-one'), last('p-two')]));
      },
      MINUTES,
    );
  });

  describe("point 13: etcdEndpoints may only name a client Service in the backup's own namespace", () => {
    test("an EtcdBackup naming another namespace's client Service is refused with a reason and one Warning Event, and writes nothing", async () => {
      await createEtcdObject(
        h,
        'EtcdBackup',
        'steal',
        {
          etcdEndpoints: [`http://db-client.${a}:2379`],
          storageType: 'Local',
          local: { path: 'stolen.db' },
        },
        b,
      );
      const status = await outcome(h, b, 'steal');
      expect(status.succeeded).toBe(false);
      expect(status.Reason).toContain('other namespaces are refused');
      await waitFor(async () => (await warnings(h, b, 'steal', 'InvalidSpec')).length > 0, {
        what: 'a Warning Event',
        timeoutMs: 20_000,
      });
      expect(await warnings(h, b, 'steal', 'InvalidSpec')).toHaveLength(1);
      expect(await readdir(join(h.backupRoot, b))).not.toContain('stolen.db');
    }, 60_000);

    test('an endpoint that is an address rather than a client Service is refused', async () => {
      const member = h.addresses.endpoints(a, 'http://db-client:2379')[0]!;
      await createEtcdObject(
        h,
        'EtcdBackup',
        'by-address',
        { etcdEndpoints: [member], storageType: 'Local', local: { path: 'by-address.db' } },
        b,
      );
      expect(await outcome(h, b, 'by-address')).toMatchObject({
        succeeded: false,
        Reason: expect.stringContaining(JSON.stringify(member)),
      });
    }, 60_000);

    test('an endpoint naming a cluster that does not exist in the namespace is refused', async () => {
      await createEtcdObject(
        h,
        'EtcdBackup',
        'nothing',
        {
          etcdEndpoints: ['http://nothing-client:2379'],
          storageType: 'Local',
          local: { path: 'nothing.db' },
        },
        b,
      );
      expect(await outcome(h, b, 'nothing')).toMatchObject({
        succeeded: false,
        Reason: expect.stringContaining('which does not exist'),
      });
    }, 60_000);

    test('an EtcdBackup of a paused cluster whose client Service the tenant made an ExternalName to another namespace is refused, and nothing is snapshotted', async () => {
      await h.api.request('POST', etcdObjectPath(b, 'etcdclusters'), {
        body: {
          apiVersion: ETCD_API,
          kind: 'EtcdCluster',
          metadata: { name: 'foo' },
          spec: { size: 1, paused: true },
        },
      });
      await h.api.request('POST', `/api/v1/namespaces/${b}/services`, {
        body: {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'foo-client' },
          spec: { type: 'ExternalName', externalName: `db-client.${a}.svc.cluster.local` },
        },
      });
      // Cluster DNS follows the tenant's ExternalName to the other namespace's members; the local
      // addresses have no DNS, so they stand in for it here.
      const dns = h.addresses.endpoints.bind(h.addresses);
      h.addresses.endpoints = (namespace, endpoint) =>
        /foo-client/.test(endpoint) ? dns(a, 'http://db-client:2379') : dns(namespace, endpoint);
      try {
        await createEtcdObject(
          h,
          'EtcdBackup',
          'via-external-name',
          {
            etcdEndpoints: ['http://foo-client:2379'],
            storageType: 'Local',
            local: { path: 'external.db' },
          },
          b,
        );
        const status = await outcome(h, b, 'via-external-name');
        expect(status).toMatchObject({
          succeeded: false,
          Reason: expect.stringContaining(
            `EtcdCluster ${b}/foo has no running member Pods of its own`,
          ),
        });
        await waitFor(
          async () => (await warnings(h, b, 'via-external-name', 'BackupFailed')).length > 0,
          { what: 'a Warning Event', timeoutMs: 20_000 },
        );
        expect(await readdir(join(h.backupRoot, b)).catch(() => [])).not.toContain('external.db');
      } finally {
        h.addresses.endpoints = dns;
      }
    }, 60_000);

    test('a cluster whose client Service someone else created reports it in status and one Warning Event, and does not use it', async () => {
      await h.api.request('POST', `/api/v1/namespaces/${b}/services`, {
        body: {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'taken-client' },
          spec: { type: 'ExternalName', externalName: `db-client.${a}.svc.cluster.local` },
        },
      });
      await h.api.request('POST', etcdObjectPath(b, 'etcdclusters'), {
        body: {
          apiVersion: ETCD_API,
          kind: 'EtcdCluster',
          metadata: { name: 'taken' },
          spec: { size: 1 },
        },
      });
      await waitFor(
        async () =>
          (await etcdStatus<{ reason?: string }>(h, 'etcdclusters', 'taken', b))?.reason?.includes(
            'was not created by the operator',
          ) ?? false,
        { what: 'the foreign Service to be reported', timeoutMs: 60_000 },
      );
      expect(
        (await etcdStatus<{ reason?: string }>(h, 'etcdclusters', 'taken', b))?.reason,
      ).toContain(`Service ${b}/taken-client exists`);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(await warnings(h, b, 'taken', 'ForeignService')).toHaveLength(1);
      const service = await h.api.request<{ spec: { type?: string } }>(
        'GET',
        `/api/v1/namespaces/${b}/services/taken-client`,
      );
      expect(service.spec.type).toBe('ExternalName');
    }, 90_000);

    test('a periodic EtcdBackup with a refused endpoint posts one Warning Event, not one per interval', async () => {
      await createEtcdObject(
        h,
        'EtcdBackup',
        'steal-often',
        {
          etcdEndpoints: [`http://db-client.${a}:2379`],
          storageType: 'Local',
          local: { path: 'often' },
          backupPolicy: { backupIntervalInSecond: 1 },
        },
        b,
      );
      await outcome(h, b, 'steal-often');
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      const events = await warnings(h, b, 'steal-often', 'InvalidSpec');
      expect(events).toHaveLength(1);
      expect(events[0]!.count ?? 1).toBe(1);
    }, 60_000);
  });
});
