// Invalid etcd specs: refused by the CRD schema at the API server where it can; otherwise reported
// by the operator in status and a Warning Event, with nothing started or written.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiError } from '../../../src/framework/index.js';
import { installCrds, readCrds, TestControlPlane } from '../../../src/testing/index.js';
import {
  createCluster,
  ETCD_API,
  installEtcdCrds,
  readCluster,
  startEtcdOperator,
  type EtcdClusterView,
  type EtcdHarness,
} from '../../support/etcd.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';

interface BackupView {
  metadata: { name: string };
  status?: { succeeded?: boolean; Reason?: string | null; lastBackup?: string | null };
}

interface EventView {
  type: string;
  reason: string;
  message: string;
  involvedObject: { kind: string; name: string };
}

const backupsPath = (namespace: string, name = ''): string =>
  `/apis/${ETCD_API}/namespaces/${namespace}/etcdbackups${name ? `/${name}` : ''}`;

async function createBackup(
  h: EtcdHarness,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await h.api.request('POST', backupsPath(h.namespace), {
    body: { apiVersion: ETCD_API, kind: 'EtcdBackup', metadata: { name }, spec },
  });
}

function readBackup(h: EtcdHarness, name: string): Promise<BackupView> {
  return h.api.request<BackupView>('GET', backupsPath(h.namespace, name));
}

/** The backup once the operator has recorded an outcome. */
async function backupOutcome(h: EtcdHarness, name: string): Promise<BackupView> {
  await waitFor(async () => (await readBackup(h, name)).status?.succeeded !== undefined, {
    what: `an outcome in ${name}'s status`,
    timeoutMs: 30_000,
  });
  return readBackup(h, name);
}

async function eventsAbout(h: EtcdHarness, name: string): Promise<EventView[]> {
  const list = await h.api.request<{ items: EventView[] }>(
    'GET',
    `/api/v1/namespaces/${h.namespace}/events`,
    { query: { fieldSelector: `involvedObject.name=${name}` } },
  );
  return list.items;
}

/** The Warning Events about `name` with `reason`, once there is one. */
async function warnings(h: EtcdHarness, name: string, reason: string): Promise<EventView[]> {
  let found: EventView[] = [];
  await waitFor(
    async () => {
      found = (await eventsAbout(h, name)).filter(
        (e) => e.type === 'Warning' && e.reason === reason,
      );
      return found.length > 0;
    },
    { what: `a Warning Event ${reason} about ${name}`, timeoutMs: 20_000 },
  );
  return found;
}

/** The error a request failed with; fails the test when it succeeded. */
async function refusal(request: Promise<unknown>): Promise<ApiError> {
  try {
    await request;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('the API server accepted the object');
}

describe('on the shared control plane, with the etcd CRDs as shipped', () => {
  let h: EtcdHarness;
  beforeAll(async () => {
    const kc = sharedKubeConfig();
    await installEtcdCrds(kc);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd-invalid'));
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
  });

  test('the CRD refuses an EtcdCluster of size 0 with 422 naming spec.size', async () => {
    const error = await refusal(createCluster(h, 'zero', { size: 0 }));
    expect(error.status).toBe(422);
    expect(error.message).toContain('spec.size');
  });

  test('the CRD refuses an EtcdBackup with storageType GCS with 422 naming spec.storageType', async () => {
    const error = await refusal(
      createBackup(h, 'to-gcs', {
        etcdEndpoints: ['http://somewhere-client:2379'],
        storageType: 'GCS',
        gcs: { path: 'bucket/key' },
      }),
    );
    expect(error.status).toBe(422);
    expect(error.message).toContain('spec.storageType');
  });

  describe('an EtcdBackup to S3 whose s3.awsSecret names a Secret that does not exist', () => {
    const name = 'no-credentials';
    let backup: BackupView;
    beforeAll(async () => {
      await createBackup(h, name, {
        etcdEndpoints: ['http://somewhere-client:2379'],
        storageType: 'S3',
        s3: { path: 'backups/etcd/somewhere', awsSecret: 'missing-aws-credentials' },
      });
      backup = await backupOutcome(h, name);
    }, 40_000);

    test('fails with a Reason naming the Secret', () => {
      expect(backup.status?.succeeded).toBe(false);
      expect(backup.status?.Reason).toContain(`${h.namespace}/missing-aws-credentials`);
      expect(backup.status?.Reason).toContain('spec.s3.awsSecret');
      expect(backup.status?.lastBackup ?? undefined).toBeUndefined();
    });

    test('gets a Warning Event naming the Secret', async () => {
      const [event] = await warnings(h, name, 'InvalidSpec');
      expect(event!.involvedObject.kind).toBe('EtcdBackup');
      expect(event!.message).toContain('missing-aws-credentials');
    });

    test('writes nothing to the backup root', async () => {
      expect(await readdir(h.backupRoot)).toEqual([]);
    });
  });
});

/** Removes, in place, every schema keyword that constrains values, at any depth. */
function removeValidation(node: unknown): void {
  // readCrds yields client-node models, where `enum` is spelt `_enum`.
  const constraints = new Set(['minimum', 'maximum', 'enum', '_enum', 'pattern', 'minItems']);
  if (Array.isArray(node)) {
    for (const item of node) removeValidation(item);
  } else if (node !== null && typeof node === 'object') {
    const object = node as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      if (constraints.has(key)) delete object[key];
      else removeValidation(object[key]);
    }
  }
}

// The original etcd-operator created schemaless CRDs, so clusters may hold objects no schema ever
// checked. A control plane of our own gets the etcd CRDs without their value constraints, so such
// objects can be stored, and the operator must catch them itself.
describe('objects stored before the CRDs had validation', () => {
  let plane: TestControlPlane;
  let kc: KubeConfig;
  let h: EtcdHarness;
  beforeAll(async () => {
    plane = await TestControlPlane.start();
    kc = plane.kubeConfig();
    const crds = readCrds(join(process.cwd(), 'crds', 'etcd.database.coreos.com.yaml'));
    removeValidation(crds);
    expect(JSON.stringify(crds)).not.toMatch(/"(minimum|maximum|_?enum|pattern|minItems)"/);
    await installCrds(kc, crds);
    h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'etcd-legacy'));
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
    await plane?.stop();
  }, 30_000);

  describe('an EtcdCluster of size 0', () => {
    const name = 'zero';
    let cluster: EtcdClusterView;
    beforeAll(async () => {
      await createCluster(h, name, { size: 0 });
      await waitFor(async () => (await readCluster(h, name)).status?.reason !== undefined, {
        what: `a reason in ${name}'s status`,
        timeoutMs: 30_000,
      });
      cluster = await readCluster(h, name);
    }, 40_000);

    test('is reported in status.reason naming spec.size', () => {
      expect(cluster.status?.reason).toContain('spec.size');
      expect(cluster.status?.reason).toContain('got 0');
    });

    test('has a Valid condition False with reason InvalidSpec', () => {
      const valid = cluster.status?.conditions?.find((c) => c.type === 'Valid');
      expect(valid).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
      expect(valid?.message).toContain('spec.size');
    });

    test('gets a Warning Event InvalidSpec naming spec.size', async () => {
      const [event] = await warnings(h, name, 'InvalidSpec');
      expect(event!.involvedObject.kind).toBe('EtcdCluster');
      expect(event!.message).toContain('spec.size');
    });

    test('gets no Pods and no Services, however many ticks pass', async () => {
      await sleep(4_000); // the harness looks at a settled cluster every second
      const pods = await h.api.request<{ items: unknown[] }>(
        'GET',
        `/api/v1/namespaces/${h.namespace}/pods`,
      );
      const services = await h.api.request<{ items: unknown[] }>(
        'GET',
        `/api/v1/namespaces/${h.namespace}/services`,
      );
      expect(pods.items).toEqual([]);
      expect(services.items).toEqual([]);
      expect((await readCluster(h, name)).status?.phase ?? '').toBe('');
    }, 20_000);
  });

  describe('an EtcdBackup with storageType GCS', () => {
    const name = 'to-gcs';
    let backup: BackupView;
    beforeAll(async () => {
      await createBackup(h, name, {
        etcdEndpoints: ['http://zero-client:2379'],
        storageType: 'GCS',
        gcs: { path: 'bucket/key', gcpSecret: 'gcp' },
      });
      backup = await backupOutcome(h, name);
    }, 40_000);

    test('fails with the Reason "unknown storage type"', () => {
      expect(backup.status?.succeeded).toBe(false);
      expect(backup.status?.Reason).toMatch(/^unknown storage type "GCS"/);
    });

    test('gets a Warning Event', async () => {
      const [event] = await warnings(h, name, 'InvalidSpec');
      expect(event!.involvedObject.kind).toBe('EtcdBackup');
      expect(event!.message).toContain('unknown storage type "GCS"');
    });

    test('writes nothing to the backup root', async () => {
      expect(await readdir(h.backupRoot)).toEqual([]);
    });
  });
});
