import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  StorageV1Api,
  type KubeConfig,
  type V1PersistentVolumeClaim,
} from '@kubernetes/client-node';
import { installCrds, readCrds, TestControlPlane } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { waitFor } from '../../support/wait-for.js';
import { EphemeralVolumeClaims } from '../../fixtures/ephemeral-volume-claim/ephemeral.js';
import { SyncedVolumeClaims } from '../../fixtures/ephemeral-volume-claim/synced.js';

// Kopf's tutorial operator, translated: the acceptance fixture of the typed client and adopt().
// Deleting the child is garbage collection's job, so this runs on a plane with the controller manager.
const crd = fileURLToPath(
  new URL('../../fixtures/ephemeral-volume-claim/crd.yaml', import.meta.url),
);
const evcIds = { group: 'kopf.dev', version: 'v1', plural: 'ephemeralvolumeclaims' } as const;

let plane: TestControlPlane;
let kc: KubeConfig;
let core: CoreV1Api;
let custom: CustomObjectsApi;
let running: RunningOperator | undefined;

beforeAll(async () => {
  plane = await TestControlPlane.start();
  kc = plane.kubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  custom = kc.makeApiClient(CustomObjectsApi);
  await installCrds(kc, readCrds(crd));
  // Started after the CRD exists, its garbage collector watches EVCs from the start instead of
  // finding them at its next discovery resync (30 s).
  await plane.startControllerManager();
});

afterEach(async () => {
  await running?.stop();
  running = undefined;
});

afterAll(async () => {
  await plane?.stop();
});

async function findPvc(
  namespace: string,
  name: string,
): Promise<V1PersistentVolumeClaim | undefined> {
  try {
    return await core.readNamespacedPersistentVolumeClaim({ namespace, name });
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

function createEvc(
  namespace: string,
  name: string,
  size: string,
  labels: Record<string, string> = {},
): Promise<unknown> {
  return custom.createNamespacedCustomObject({
    ...evcIds,
    namespace,
    body: {
      apiVersion: 'kopf.dev/v1',
      kind: 'EphemeralVolumeClaim',
      metadata: { name, labels },
      spec: { size },
    },
  });
}

describe("Kopf's EphemeralVolumeClaim operator", () => {
  test('creating an EVC creates a PersistentVolumeClaim of its size, owned by the EVC', async () => {
    const namespace = await uniqueNamespace(kc, 'evc');
    running = await startOperator(kc, namespace, [EphemeralVolumeClaims]);

    await createEvc(namespace, 'my-claim', '1G', { application: 'demo' });

    const pvc = await waitFor(() => findPvc(namespace, 'my-claim'), {
      what: 'the PVC of my-claim',
    });
    const evc = (await custom.getNamespacedCustomObject({
      ...evcIds,
      namespace,
      name: 'my-claim',
    })) as { metadata: { uid: string } };
    expect(pvc!.spec?.resources?.requests?.storage).toBe('1G');
    expect(pvc!.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'kopf.dev/v1',
        kind: 'EphemeralVolumeClaim',
        name: 'my-claim',
        uid: evc.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(pvc!.metadata?.labels).toEqual({ application: 'demo' });
  });

  test("changing the EVC's labels copies them onto the PVC, removals included", async () => {
    const namespace = await uniqueNamespace(kc, 'evc-labels');
    running = await startOperator(kc, namespace, [EphemeralVolumeClaims]);
    await createEvc(namespace, 'my-claim', '1G', { application: 'demo', stale: 'yes' });
    await waitFor(
      async () =>
        (
          (await custom.getNamespacedCustomObject({ ...evcIds, namespace, name: 'my-claim' })) as {
            status?: { createFn?: unknown };
          }
        ).status?.createFn,
      { what: 'the pvc-name in status' },
    );

    await custom.patchNamespacedCustomObject(
      {
        ...evcIds,
        namespace,
        name: 'my-claim',
        body: { metadata: { labels: { application: 'some-app', owner: 'me', stale: null } } },
      },
      mergePatch(),
    );

    const pvc = await waitFor(
      async () => {
        const current = await findPvc(namespace, 'my-claim');
        return current?.metadata?.labels?.owner === 'me' ? current : undefined;
      },
      { what: 'the PVC relabelled' },
    );
    expect(pvc!.metadata?.labels).toEqual({ application: 'some-app', owner: 'me' });
  });

  test('deleting the EVC deletes its PVC, by garbage collection through the owner reference', async () => {
    const namespace = await uniqueNamespace(kc, 'evc-delete');
    running = await startOperator(kc, namespace, [EphemeralVolumeClaims]);
    await createEvc(namespace, 'my-claim', '1G');
    await waitFor(() => findPvc(namespace, 'my-claim'), { what: 'the PVC of my-claim' });

    await custom.deleteNamespacedCustomObject({ ...evcIds, namespace, name: 'my-claim' });

    // The garbage collector learns of a new CRD at its next discovery resync (every 30 s), hence the wait.
    await waitFor(async () => (await findPvc(namespace, 'my-claim')) === undefined, {
      what: 'the PVC to be collected',
      timeoutMs: 90_000,
    });
  }, 120_000);
});

describe("Kopf's EphemeralVolumeClaim operator, synced, as one reconcile", () => {
  /**
   * A volume in the `standard` class, which allows expansion (no provisioner: it is static), reserved
   * for one claim: the earlier specs' claims on this plane ask for `standard` too, and the binder
   * could give an unreserved volume to whichever of them it syncs first.
   */
  async function standardVolumeFor(namespace: string, claim: string): Promise<void> {
    const storage = kc.makeApiClient(StorageV1Api);
    try {
      await storage.createStorageClass({
        body: {
          metadata: { name: 'standard' },
          provisioner: 'kubernetes.io/no-provisioner',
          allowVolumeExpansion: true,
        },
      });
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
    }
    await core.createPersistentVolume({
      body: {
        metadata: { name: `${namespace}-pv` },
        spec: {
          claimRef: { namespace, name: claim },
          storageClassName: 'standard',
          capacity: { storage: '5Gi' },
          accessModes: ['ReadWriteOnce'],
          hostPath: { path: `/tmp/konductor-${namespace}-pv` },
        },
      },
    });
  }

  async function evcStatus(
    namespace: string,
    name: string,
  ): Promise<{ phase?: string; conditions?: { type: string; status: string }[] } | undefined> {
    return (
      (await custom.getNamespacedCustomObject({ ...evcIds, namespace, name })) as {
        status?: { phase?: string };
      }
    ).status;
  }

  test('the PVC follows the size and labels, comes back when deleted, and its phase is mirrored', async () => {
    const namespace = await uniqueNamespace(kc, 'evc-synced');
    running = await startOperator(kc, namespace, [SyncedVolumeClaims]);
    await createEvc(namespace, 'my-claim', '1G', { application: 'demo', stale: 'yes' });
    const created = await waitFor(() => findPvc(namespace, 'my-claim'), {
      what: 'the PVC of my-claim',
    });
    expect(created!.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'EphemeralVolumeClaim',
      name: 'my-claim',
      controller: true,
    });
    expect(
      await waitFor(async () => (await evcStatus(namespace, 'my-claim'))?.phase, {
        what: 'the phase mirrored',
      }),
    ).toBe('Pending');

    await standardVolumeFor(namespace, 'my-claim');
    // Two waits, so a failure says whose step did not come: the binder's or the operator's.
    await waitFor(async () => (await findPvc(namespace, 'my-claim'))?.status?.phase === 'Bound', {
      what: 'the binder to bind the PVC',
      timeoutMs: 60_000,
    });
    await waitFor(async () => (await evcStatus(namespace, 'my-claim'))?.phase === 'Bound', {
      what: 'the Bound phase mirrored',
    });
    await custom.patchNamespacedCustomObject(
      {
        ...evcIds,
        namespace,
        name: 'my-claim',
        body: { metadata: { labels: { owner: 'me', stale: null } }, spec: { size: '2G' } },
      },
      mergePatch(),
    );
    const followed = await waitFor(
      async () => {
        const pvc = await findPvc(namespace, 'my-claim');
        return pvc?.spec?.resources?.requests?.storage === '2G' &&
          pvc.metadata?.labels?.owner === 'me'
          ? pvc
          : undefined;
      },
      { what: 'the PVC resized and relabelled' },
    );
    expect(followed!.metadata?.labels).toEqual({ application: 'demo', owner: 'me' });

    await core.deleteNamespacedPersistentVolumeClaim({ namespace, name: 'my-claim' });
    await waitFor(
      async () => {
        const pvc = await findPvc(namespace, 'my-claim');
        return (
          pvc !== undefined &&
          pvc.metadata?.uid !== followed!.metadata?.uid &&
          pvc.metadata?.deletionTimestamp === undefined
        );
      },
      { what: 'the deleted PVC put back', timeoutMs: 60_000 },
    );
  }, 120_000);

  test('the operator is at most 35 code lines, with one import and no hand-written Kubernetes type', () => {
    const source = readFileSync(
      fileURLToPath(new URL('../../fixtures/ephemeral-volume-claim/synced.ts', import.meta.url)),
      'utf8',
    );
    const code = source
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.trim().startsWith('//'));

    expect(code.length).toBeLessThanOrEqual(35);
    expect(code.filter((line) => /^import\b/.test(line))).toHaveLength(1);
    expect(source).not.toMatch(/\binterface\b|extends KubeObject|@kubernetes\/client-node/);
  });
});

/** client-node's option for a JSON merge patch. */
function mergePatch() {
  return setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
}
