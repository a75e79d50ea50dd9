import {
  CustomObjectsApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  Watch,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { kubeConfigForServiceAccount } from '../../../src/testing/index.js';
import { sharedKubeConfig, statusOf, uniqueNamespace } from '../../support/cluster.js';
import {
  installWidgetCrd,
  WIDGET_API_VERSION,
  widgetIds as widgets,
  type Widget,
} from '../../support/widgets.js';

let kc: KubeConfig;
let api: CustomObjectsApi;
let namespace: string;

beforeAll(async () => {
  kc = sharedKubeConfig();
  api = kc.makeApiClient(CustomObjectsApi);
  await installWidgetCrd(kc);
  namespace = await uniqueNamespace(kc, 'cp');
});

function createWidget(name: string, spec: Widget['spec'] = { size: 1 }): Promise<Widget> {
  return api.createNamespacedCustomObject({
    ...widgets,
    namespace,
    body: { apiVersion: WIDGET_API_VERSION, kind: 'Widget', metadata: { name }, spec },
  }) as Promise<Widget>;
}

describe('the test control plane', () => {
  test('serves a CRD once installed: custom objects can be created and read back', async () => {
    await createWidget('w-create', { size: 3, color: 'red' });
    const read = (await api.getNamespacedCustomObject({
      ...widgets,
      namespace,
      name: 'w-create',
    })) as Widget;
    expect(read.spec).toEqual({ size: 3, color: 'red' });
    expect(read.metadata?.uid).toBeTruthy();
  });

  test('applies a merge patch to the main resource', async () => {
    await createWidget('w-merge', { size: 1, color: 'red' });
    const patched = (await api.patchNamespacedCustomObject(
      { ...widgets, namespace, name: 'w-merge', body: { spec: { size: 5 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Widget;
    expect(patched.spec).toEqual({ size: 5, color: 'red' });
  });

  test('applies a JSON patch to the main resource, and rejects one whose test operation fails', async () => {
    await createWidget('w-json', { size: 1 });
    const patched = (await api.patchNamespacedCustomObject(
      {
        ...widgets,
        namespace,
        name: 'w-json',
        body: [
          { op: 'test', path: '/spec/size', value: 1 },
          { op: 'replace', path: '/spec/size', value: 2 },
        ],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    )) as Widget;
    expect(patched.spec?.size).toBe(2);
    const stale = api.patchNamespacedCustomObject(
      {
        ...widgets,
        namespace,
        name: 'w-json',
        body: [
          { op: 'test', path: '/spec/size', value: 1 },
          { op: 'replace', path: '/spec/size', value: 9 },
        ],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    await expect(stale.catch(statusOf)).resolves.toBe(422);
  });

  test('keeps status on its subresource: merge and JSON patches on /status change status only', async () => {
    await createWidget('w-status', { size: 1 });
    await api.patchNamespacedCustomObjectStatus(
      {
        ...widgets,
        namespace,
        name: 'w-status',
        body: { status: { phase: 'Ready' }, spec: { size: 7 } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await api.patchNamespacedCustomObjectStatus(
      {
        ...widgets,
        namespace,
        name: 'w-status',
        body: [{ op: 'add', path: '/status/observed', value: 1 }],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    const read = (await api.getNamespacedCustomObject({
      ...widgets,
      namespace,
      name: 'w-status',
    })) as Widget;
    expect(read.status).toEqual({ phase: 'Ready', observed: 1 });
    expect(read.spec?.size).toBe(1);
  });

  test('delivers ADDED, MODIFIED and DELETED through a watch', async () => {
    const list = (await api.listNamespacedCustomObject({ ...widgets, namespace })) as {
      metadata: { resourceVersion: string };
    };
    const seen: string[] = [];
    const watch = new Watch(kc);
    const done = new Promise<void>((resolve, reject) => {
      void watch
        .watch(
          `/apis/${widgets.group}/${widgets.version}/namespaces/${namespace}/${widgets.plural}`,
          {
            resourceVersion: list.metadata.resourceVersion,
            fieldSelector: 'metadata.name=w-watch',
          },
          (phase) => {
            seen.push(phase);
            if (phase === 'DELETED') resolve();
          },
          (err) => (err ? reject(err) : undefined),
        )
        .then((controller) => done.finally(() => controller.abort()));
    });
    await createWidget('w-watch');
    await api.patchNamespacedCustomObject(
      { ...widgets, namespace, name: 'w-watch', body: { spec: { size: 2 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await api.deleteNamespacedCustomObject({ ...widgets, namespace, name: 'w-watch' });
    await done;
    expect(seen).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
  });

  test('answers 410 Gone to a watch from an expired resourceVersion', async () => {
    await createWidget('w-expired');
    const watch = new Watch(kc);
    const code = await new Promise<number | undefined>((resolve) => {
      void watch
        .watch(
          `/apis/${widgets.group}/${widgets.version}/namespaces/${namespace}/${widgets.plural}`,
          { resourceVersion: '1' },
          (phase, obj: { code?: number }) => {
            if (phase === 'ERROR') resolve(obj.code);
          },
          (err) => resolve(err ? statusOf(err) : undefined),
        )
        .then((controller) => setTimeout(() => controller.abort(), 10_000).unref());
    });
    expect(code).toBe(410);
  });

  describe('RBAC for a ServiceAccount', () => {
    test('denies a ServiceAccount with no permissions (403)', async () => {
      const saKc = await kubeConfigForServiceAccount(kc, { namespace, name: 'nobody' });
      const denied = saKc
        .makeApiClient(CustomObjectsApi)
        .listNamespacedCustomObject({ ...widgets, namespace });
      await expect(denied.catch(statusOf)).resolves.toBe(403);
    });

    test('allows the same request once a Role grants it', async () => {
      const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
      await rbac.createNamespacedRole({
        namespace,
        body: {
          metadata: { name: 'widget-reader' },
          rules: [
            {
              apiGroups: [widgets.group],
              resources: [widgets.plural],
              verbs: ['get', 'list', 'watch'],
            },
          ],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: 'reader-widgets' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'widget-reader' },
          subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace }],
        },
      });
      const saKc = await kubeConfigForServiceAccount(kc, { namespace, name: 'reader' });
      const listed = (await saKc
        .makeApiClient(CustomObjectsApi)
        .listNamespacedCustomObject({ ...widgets, namespace })) as { items: unknown[] };
      expect(Array.isArray(listed.items)).toBe(true);
    });
  });
});
