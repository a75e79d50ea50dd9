import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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
import { pino } from 'pino';
import { installCrds, readCrds, TestControlPlane } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { waitFor } from '../../support/wait-for.js';
import { EphemeralVolumeClaims as Starting } from '../../../examples/ephemeral-volume-claim/starting.js';
import { EphemeralVolumeClaims as Creation } from '../../../examples/ephemeral-volume-claim/creation.js';
import { EphemeralVolumeClaims as Updates } from '../../../examples/ephemeral-volume-claim/updates.js';
import { EphemeralVolumeClaims as Diffs } from '../../../examples/ephemeral-volume-claim/diffs.js';
import { EphemeralVolumeClaims as Deletion } from '../../../examples/ephemeral-volume-claim/deletion.js';
import { EphemeralVolumeClaims as Reconcile } from '../../../examples/ephemeral-volume-claim/reconcile.js';

// The tutorial (docs/tutorial/), one step per test: each step's class does what its page says.
// Binding a PVC and garbage collection need the controller manager.
const root = fileURLToPath(new URL('../../..', import.meta.url));
const examples = join(root, 'examples', 'ephemeral-volume-claim');
const tutorial = join(root, 'docs', 'tutorial');
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
  await installCrds(kc, readCrds(join(examples, 'crd.yaml')));
  // Started after the CRD exists, its garbage collector watches claims from the start.
  await plane.startControllerManager();
  const storage = kc.makeApiClient(StorageV1Api);
  await storage.createStorageClass({
    body: {
      metadata: { name: 'standard' },
      provisioner: 'kubernetes.io/no-provisioner',
      allowVolumeExpansion: true,
    },
  });
}, 60_000);

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
  size: string,
  labels: Record<string, string> = {},
): Promise<unknown> {
  const body = {
    apiVersion: 'kopf.dev/v1',
    kind: 'EphemeralVolumeClaim',
    metadata: { name: 'my-claim', labels },
    spec: { size },
  };
  return custom.createNamespacedCustomObject({ ...evcIds, namespace, body });
}

function patchEvc(namespace: string, body: object): Promise<unknown> {
  return custom.patchNamespacedCustomObject(
    { ...evcIds, namespace, name: 'my-claim', body },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function evcStatus(namespace: string): Promise<Record<string, unknown> | undefined> {
  return (
    (await custom.getNamespacedCustomObject({ ...evcIds, namespace, name: 'my-claim' })) as {
      status?: Record<string, unknown>;
    }
  ).status;
}

/**
 * A volume in the `standard` class for the namespace's claim to bind to: a PVC can be resized only once
 * bound. Its claimRef keeps other tests' pending claims off it.
 */
async function volumeFor(namespace: string): Promise<void> {
  const spec = {
    storageClassName: 'standard',
    capacity: { storage: '5Gi' },
    accessModes: ['ReadWriteOnce'],
    hostPath: { path: `/tmp/konductor-${namespace}` },
    claimRef: { namespace, name: 'my-claim' },
  };
  await core.createPersistentVolume({ body: { metadata: { name: `${namespace}-pv` }, spec } });
}

async function bound(namespace: string): Promise<void> {
  await waitFor(async () => (await findPvc(namespace, 'my-claim'))?.status?.phase === 'Bound', {
    what: 'the PVC to be bound',
    timeoutMs: 30_000,
  });
}

describe('the EphemeralVolumeClaim tutorial, step by step', () => {
  test('2, starting: the create handler is called with the new claim', async () => {
    const namespace = await uniqueNamespace(kc, 'evc-starting');
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    running = await startOperator(kc, namespace, [Starting], { logger });

    await createEvc(namespace, '1G');

    const line = await waitFor(
      () => lines.find((text) => text.includes('A handler is called with body')),
      { what: 'the handler to log' },
    );
    expect(JSON.parse(line!) as unknown).toMatchObject({
      name: 'my-claim',
      body: { spec: { size: '1G' } },
    });
  });

  test('3, creation: a new claim gets a PVC of its size, not yet owned by the claim', async () => {
    const namespace = await uniqueNamespace(kc, 'evc-creation');
    running = await startOperator(kc, namespace, [Creation]);

    await createEvc(namespace, '1G');

    const pvc = await waitFor(() => findPvc(namespace, 'my-claim'), {
      what: 'the PVC of my-claim',
    });
    expect(pvc!.spec?.resources?.requests?.storage).toBe('1G');
    expect(pvc!.metadata?.ownerReferences).toBeUndefined();
  });

  test("4, updates: createFn's result names the PVC in the claim's status, and a new size reaches the PVC", async () => {
    const namespace = await uniqueNamespace(kc, 'evc-updates');
    running = await startOperator(kc, namespace, [Updates]);
    await volumeFor(namespace);

    await createEvc(namespace, '1G');

    const result = await waitFor(() => evcStatus(namespace).then((current) => current?.createFn), {
      what: 'the result of createFn',
    });
    expect(result).toEqual({ 'pvc-name': 'my-claim' });
    await bound(namespace);
    await patchEvc(namespace, { spec: { size: '2G' } });
    await waitFor(
      async () =>
        (await findPvc(namespace, 'my-claim'))?.spec?.resources?.requests?.storage === '2G',
      { what: 'the PVC resized' },
    );
  });

  test("5, diffs: the claim's labels reach the PVC, removals included", async () => {
    const namespace = await uniqueNamespace(kc, 'evc-diffs');
    running = await startOperator(kc, namespace, [Diffs]);
    await createEvc(namespace, '1G');
    await waitFor(() => evcStatus(namespace).then((current) => current?.createFn), {
      what: 'the result of createFn',
    });

    await patchEvc(namespace, { metadata: { labels: { application: 'some-app', owner: 'me' } } });
    await waitFor(
      async () => (await findPvc(namespace, 'my-claim'))?.metadata?.labels?.owner === 'me',
      { what: 'the PVC labelled' },
    );
    await patchEvc(namespace, { metadata: { labels: { owner: null } } });

    const pvc = await waitFor(
      async () => {
        const current = await findPvc(namespace, 'my-claim');
        return current?.metadata?.labels?.owner === undefined ? current : undefined;
      },
      { what: 'the label removed from the PVC' },
    );
    expect(pvc!.metadata?.labels).toEqual({ application: 'some-app' });
  });

  test('6, deletion: the PVC is owned by the claim, and goes with it', async () => {
    const namespace = await uniqueNamespace(kc, 'evc-deletion');
    running = await startOperator(kc, namespace, [Deletion]);
    await createEvc(namespace, '1G', { application: 'demo' });

    const pvc = await waitFor(() => findPvc(namespace, 'my-claim'), {
      what: 'the PVC of my-claim',
    });
    const evc = (await custom.getNamespacedCustomObject({
      ...evcIds,
      namespace,
      name: 'my-claim',
    })) as { metadata: { uid: string } };
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

    await custom.deleteNamespacedCustomObject({ ...evcIds, namespace, name: 'my-claim' });
    await waitFor(async () => (await findPvc(namespace, 'my-claim')) === undefined, {
      what: 'the PVC to be collected',
      timeoutMs: 45_000,
    });
  }, 60_000);

  test('7, reconcile: the PVC follows size and labels, comes back when deleted, and its phase shows in the status', async () => {
    const namespace = await uniqueNamespace(kc, 'evc-reconcile');
    running = await startOperator(kc, namespace, [Reconcile]);
    await volumeFor(namespace);
    await createEvc(namespace, '1G', { application: 'demo', stale: 'yes' });

    await waitFor(async () => (await evcStatus(namespace))?.phase === 'Bound', {
      what: 'the Bound phase in the status',
      timeoutMs: 30_000,
    });
    await patchEvc(namespace, {
      metadata: { labels: { owner: 'me', stale: null } },
      spec: { size: '2G' },
    });
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
      { what: 'the deleted PVC put back', timeoutMs: 30_000 },
    );
  }, 60_000);
});

describe("the tutorial's pages", () => {
  test('show each example file exactly as it is in examples/ephemeral-volume-claim, and every one of them', () => {
    const shown = new Map<string, string>();
    for (const page of readdirSync(tutorial).filter((name) => name.endsWith('.md'))) {
      const markdown = readFileSync(join(tutorial, page), 'utf8');
      for (const [, body = ''] of markdown.matchAll(/^```\w*\n([\s\S]*?)^```$/gm)) {
        const named = /^(?:\/\/|#) examples\/ephemeral-volume-claim\/([\w.-]+)\n/.exec(body);
        if (named) shown.set(named[1]!, body.slice(named[0].length));
      }
    }
    const files = readdirSync(examples).sort();
    expect([...shown.keys()].sort()).toEqual(files);
    for (const file of files) {
      expect({ file, shown: shown.get(file) }).toEqual({
        file,
        shown: readFileSync(join(examples, file), 'utf8'),
      });
    }
  });
});
