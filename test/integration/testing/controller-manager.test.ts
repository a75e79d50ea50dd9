import { existsSync } from 'node:fs';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { TestControlPlane } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';
import { Widgets, installWidgetCrd, widgetIds, type Widget } from '../../support/widgets.js';
import { isAlive } from '../../support/process-alive.js';

// The controller manager acts on the whole plane, so these specs run on a plane of their own
// rather than on the shared one (which has none, as users' planes have none by default).
let plane: TestControlPlane;
let kc: KubeConfig;
let core: CoreV1Api;

beforeAll(async () => {
  plane = await TestControlPlane.start({ controllerManager: true });
  kc = plane.kubeConfig();
  core = kc.makeApiClient(CoreV1Api);
});

afterAll(async () => {
  await plane?.stop();
});

/** True once reading the object answers 404. */
async function gone(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return false;
  } catch (error) {
    if (statusOf(error) === 404) return true;
    throw error;
  }
}

describe('a test control plane with the controller manager', () => {
  test('garbage-collects an owned ConfigMap after its owner is deleted', async () => {
    const namespace = await uniqueNamespace(kc, 'gc');
    const owner = await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'owner' } },
    });
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: {
          name: 'owned',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid! },
          ],
        },
      },
    });

    await core.deleteNamespacedConfigMap({ namespace, name: 'owner' });

    await waitFor(() => gone(() => core.readNamespacedConfigMap({ namespace, name: 'owned' })), {
      what: 'the owned ConfigMap to be collected',
      timeoutMs: 30_000,
    });
  });

  test('completes the deletion of a namespace holding objects, custom ones included: the namespace and its objects are gone', async () => {
    await installWidgetCrd(kc);
    const namespace = await uniqueNamespace(kc, 'ns-del');
    const widgets = new Widgets(kc, namespace);
    for (let i = 0; i < 3; i++) {
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: `data-${i}` } },
      });
      await widgets.create(`widget-${i}`);
    }

    await core.deleteNamespace({ name: namespace });

    await waitFor(() => gone(() => core.readNamespace({ name: namespace })), {
      what: `namespace ${namespace} to be gone`,
      timeoutMs: 60_000,
    });
    const left = await core.listNamespacedConfigMap({ namespace });
    expect(left.items.map((item) => item.metadata?.name)).toEqual([]);
    const widgetsLeft = (await kc
      .makeApiClient(CustomObjectsApi)
      .listNamespacedCustomObject({ ...widgetIds, namespace })) as { items: Widget[] };
    expect(widgetsLeft.items.map((item) => item.metadata?.name)).toEqual([]);
  });

  test('gives a Deployment its ReplicaSet', async () => {
    const namespace = await uniqueNamespace(kc, 'deploy');
    const apps = kc.makeApiClient(AppsV1Api);
    const labels = { app: 'web' };
    const deployment = await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [{ name: 'web', image: 'nginx' }] },
          },
        },
      },
    });

    const replicaSets = await waitFor(
      async () => {
        const list = await apps.listNamespacedReplicaSet({ namespace });
        return list.items.length > 0 ? list.items : undefined;
      },
      { what: 'the Deployment to get a ReplicaSet', timeoutMs: 30_000 },
    );
    expect(replicaSets!.map((rs) => rs.metadata?.ownerReferences?.[0]?.uid)).toEqual([
      deployment.metadata!.uid,
    ]);
  });
});

describe('stopping a plane with the controller manager', () => {
  test('stops the controller manager and removes the folder', async () => {
    const own = await TestControlPlane.start({ controllerManager: true });
    const pid = own.controllerManager!.pid!;
    await own.stop();
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(own.dir)).toBe(false);
  });
});
