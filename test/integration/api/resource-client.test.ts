import type { KubeConfig, V1ConfigMap, V1Deployment } from '@kubernetes/client-node';
import { ApiClient, ApiError, type KubeObject } from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { installWidgetCrd, WIDGET_API_VERSION, type Widget } from '../../support/widgets.js';

// The typed resource client against the real API server: what each verb does, as a user sees it.
let kc: KubeConfig;
let client: ApiClient;
let namespace: string;

beforeAll(async () => {
  kc = sharedKubeConfig();
  client = new ApiClient(kc, { fieldManager: 'resource-client-spec' });
  namespace = await uniqueNamespace(kc, 'typed');
});

afterAll(() => client.close());

const configMap = (
  name: string,
  data: Record<string, string> = {},
  labels: Record<string, string> = {},
): V1ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, labels },
  data,
});

/** The managers named in the object's managedFields (the typed client leaves them out, so read raw). */
async function managers(name: string): Promise<string[]> {
  const raw = await client.request<KubeObject>(
    'GET',
    `/api/v1/namespaces/${namespace}/configmaps/${name}`,
  );
  return ((raw.metadata?.managedFields ?? []) as Array<{ manager: string }>)
    .map((entry) => entry.manager)
    .sort();
}

describe('reading', () => {
  test('get returns the created object, without managedFields; find answers undefined for a missing one', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'configmaps');
    await configMaps.create(configMap('read', { a: '1' }));

    const read = await configMaps.get({ namespace, name: 'read' });

    expect(read.data).toEqual({ a: '1' });
    expect(read.metadata?.managedFields).toBeUndefined();
    expect(await configMaps.find({ namespace, name: 'missing' })).toBeUndefined();
  });

  test('get of a missing object throws an ApiError that isNotFound', async () => {
    const error: unknown = await client
      .resource('v1', 'ConfigMap')
      .get({ namespace, name: 'missing' })
      .catch((e: unknown) => e);
    expect(ApiError.isNotFound(error)).toBe(true);
  });

  test('a second create of a name throws isAlreadyExists (a conflict)', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'cm');
    await configMaps.create(configMap('twice'));
    const error = await configMaps.create(configMap('twice')).catch((e: unknown) => e);
    expect([ApiError.isAlreadyExists(error), ApiError.isConflict(error)]).toEqual([true, true]);
  });

  test('a dry-run create stores nothing', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'configmaps');
    const answer = await configMaps.create(configMap('dry'), { dryRun: true });
    expect(answer.metadata?.name).toBe('dry');
    expect(await configMaps.find({ namespace, name: 'dry' })).toBeUndefined();
  });

  test('list filters by label and field selectors, and its items carry apiVersion and kind', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'configmaps');
    await configMaps.create(configMap('sel-a', {}, { app: 'web' }));
    await configMaps.create(configMap('sel-b', {}, { app: 'db' }));

    const byLabel = await configMaps.list({ namespace, labelSelector: { app: 'web' } });
    const byField = await configMaps.list({ namespace, fieldSelector: 'metadata.name=sel-b' });

    expect(byLabel.items.map((item) => [item.apiVersion, item.kind, item.metadata?.name])).toEqual([
      ['v1', 'ConfigMap', 'sel-a'],
    ]);
    expect(byField.items.map((item) => item.metadata?.name)).toEqual(['sel-b']);
    expect(byLabel.resourceVersion).not.toBe('');
  });

  test('list pages with limit and continue; listAll walks every page', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'configmaps');
    for (let i = 0; i < 5; i++)
      await configMaps.create(configMap(`page-${i}`, {}, { set: 'paged' }));

    const first = await configMaps.list({ namespace, labelSelector: 'set=paged', limit: 2 });
    const all: string[] = [];
    for await (const item of configMaps.listAll({
      namespace,
      labelSelector: 'set=paged',
      limit: 2,
    }))
      all.push(item.metadata!.name!);

    expect(first.items).toHaveLength(2);
    expect(first.continue).toBeDefined();
    expect(all.sort()).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4']);
  });
});

describe('patching', () => {
  test('a merge patch (the default) changes and, with null, deletes fields', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'configmaps');
    await configMaps.create(configMap('merge', { keep: '1', drop: '2' }));
    const patched = await configMaps.patch(
      { namespace, name: 'merge' },
      { data: { drop: null, add: '3' } },
    );
    expect(patched.data).toEqual({ keep: '1', add: '3' });
  });

  test('a JSON patch applies its operations, and a failed test operation is isInvalid', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'configmaps');
    await configMaps.create(configMap('json', { a: '1' }));
    const patched = await configMaps.patch(
      { namespace, name: 'json' },
      [{ op: 'add', path: '/data/b', value: '2' }],
      { type: 'json' },
    );
    const failed = await configMaps
      .patch({ namespace, name: 'json' }, [{ op: 'test', path: '/data/a', value: 'other' }], {
        type: 'json',
      })
      .catch((e: unknown) => e);
    expect(patched.data).toEqual({ a: '1', b: '2' });
    expect(ApiError.isInvalid(failed)).toBe(true);
  });

  test("a strategic merge patch merges a Deployment's containers by name, where a merge patch would replace the list", async () => {
    const deployments = client.resource<V1Deployment>('apps/v1', 'deployments');
    const labels = { app: 'web' };
    await deployments.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              { name: 'web', image: 'nginx' },
              { name: 'side', image: 'busybox' },
            ],
          },
        },
      },
    });
    const patched = await deployments.patch(
      { namespace, name: 'web' },
      {
        spec: {
          template: {
            spec: { containers: [{ name: 'web', env: [{ name: 'MODE', value: 'fast' }] }] },
          },
        },
      },
      { type: 'strategic' },
    );
    expect(
      patched.spec?.template.spec?.containers.map((c) => [c.name, c.image, c.env?.[0]?.value]),
    ).toEqual([
      ['web', 'nginx', 'fast'],
      ['side', 'busybox', undefined],
    ]);
  });

  test("patchStatus writes a custom resource's status through its status subresource, leaving the spec", async () => {
    await installWidgetCrd(kc);
    const widgets = client.resource<Widget>(WIDGET_API_VERSION, 'widgets');
    await widgets.create({
      apiVersion: WIDGET_API_VERSION,
      kind: 'Widget',
      metadata: { name: 'status', namespace },
      spec: { size: 1 },
    });

    const patched = await widgets.patchStatus({ namespace, name: 'status' }, { phase: 'Ready' });
    // The status subresource ignores spec changes: a status write cannot touch the spec.
    const spec = await widgets.patch(
      { namespace, name: 'status' },
      { spec: { size: 2 } },
      { subresource: 'status' },
    );

    expect(patched.status).toEqual({ phase: 'Ready' });
    expect(spec.spec).toEqual({ size: 1 });
  });

  test('replaceStatus puts the whole status and refuses a stale resourceVersion with isConflict', async () => {
    await installWidgetCrd(kc);
    const widgets = client.resource<Widget>(WIDGET_API_VERSION, 'widgets');
    const created = await widgets.create({
      apiVersion: WIDGET_API_VERSION,
      kind: 'Widget',
      metadata: { name: 'replace', namespace },
      spec: { size: 1 },
      status: {},
    });
    const replaced = await widgets.replaceStatus({ ...created, status: { phase: 'Done' } });
    const stale = await widgets
      .replaceStatus({ ...created, status: { phase: 'Stale' } })
      .catch((e: unknown) => e);
    expect(replaced.status).toEqual({ phase: 'Done' });
    expect(ApiError.isConflict(stale)).toBe(true);
  });
});

describe('server-side apply', () => {
  test("records the client's field manager in managedFields", async () => {
    await client
      .resource<V1ConfigMap>('v1', 'configmaps')
      .apply({ metadata: { name: 'applied', namespace }, data: { mode: 'fast' } });
    expect(await managers('applied')).toEqual(['resource-client-spec']);
  });

  test('conflicts on a field another manager owns without force, and takes it over with force', async () => {
    await client
      .resource<V1ConfigMap>('v1', 'configmaps')
      .apply({ metadata: { name: 'contested', namespace }, data: { mode: 'fast' } });
    const other = new ApiClient(kc, { fieldManager: 'other-operator' });
    try {
      const configMaps = other.resource<V1ConfigMap>('v1', 'configmaps');
      const refused = await configMaps
        .apply({ metadata: { name: 'contested', namespace }, data: { mode: 'slow' } })
        .catch((e: unknown) => e);
      const forced = await configMaps.apply(
        { metadata: { name: 'contested', namespace }, data: { mode: 'slow' } },
        { force: true },
      );

      expect(ApiError.isConflict(refused)).toBe(true);
      expect(forced.data).toEqual({ mode: 'slow' });
      expect(await managers('contested')).toEqual(['other-operator']);
    } finally {
      other.close();
    }
  });
});

describe('deleting', () => {
  test('answers true when it deletes and false when the object is already gone', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'configmaps');
    await configMaps.create(configMap('delete-me'));
    expect(
      await configMaps.delete(
        { namespace, name: 'delete-me' },
        { propagationPolicy: 'Background' },
      ),
    ).toBe(true);
    expect(await configMaps.find({ namespace, name: 'delete-me' })).toBeUndefined();
    expect(await configMaps.delete({ namespace, name: 'delete-me' })).toBe(false);
  });

  test('with Foreground propagation leaves the object marked for deletion with the foregroundDeletion finalizer', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'configmaps');
    await configMaps.create(configMap('foreground'));
    await configMaps.delete({ namespace, name: 'foreground' }, { propagationPolicy: 'Foreground' });
    // This plane has no garbage collector to finish the deletion, so the marks stay for us to see.
    const marked = await configMaps.get({ namespace, name: 'foreground' });
    expect([marked.metadata?.deletionTimestamp !== undefined, marked.metadata?.finalizers]).toEqual(
      [true, ['foregroundDeletion']],
    );
  });

  test('with a uid precondition refuses another incarnation of the name (isConflict) and deletes its own', async () => {
    const configMaps = client.resource<V1ConfigMap>('v1', 'configmaps');
    const created = await configMaps.create(configMap('incarnation'));
    const refused = await configMaps
      .delete(
        { namespace, name: 'incarnation' },
        { preconditions: { uid: '00000000-0000-0000-0000-000000000000' } },
      )
      .catch((e: unknown) => e);
    expect(ApiError.isConflict(refused)).toBe(true);
    expect(
      await configMaps.delete(created.metadata!, { preconditions: { uid: created.metadata!.uid } }),
    ).toBe(true);
  });
});

describe('names', () => {
  test('a name with a slash or .. is refused before any request is made', async () => {
    const requests: string[] = [];
    const counted = new ApiClient(kc);
    counted.onRequest = (method, path) => requests.push(`${method} ${path}`);
    try {
      const configMaps = counted.resource<V1ConfigMap>('v1', 'configmaps');
      await expect(configMaps.get({ namespace, name: '../../secrets/token' })).rejects.toThrow(
        /refusing the name/,
      );
      await expect(configMaps.delete({ namespace, name: '..' })).rejects.toThrow(
        /refusing the name/,
      );
      expect(requests).toEqual([]);
    } finally {
      counted.close();
    }
  });
});
