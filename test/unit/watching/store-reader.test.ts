import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { ObjectStore } from '../../../src/framework/watching/object-store.js';
import {
  listObjects,
  readObject,
  type ScopedStore,
} from '../../../src/framework/watching/store-reader.js';

function cm(
  uid: string,
  namespace: string,
  name: string,
  labels: Record<string, string> = {},
): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { uid, namespace, name, labels } };
}

function storeOf(...objects: KubeObject[]): ObjectStore {
  const store = new ObjectStore();
  for (const object of objects) store.set(object.metadata!.uid!, object);
  return store;
}

const everywhere = (): boolean => true;
const names = (objects: readonly KubeObject[]): string[] =>
  objects.map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`).sort();

describe('the object store', () => {
  test('finds an object by namespace and name, and forgets it when deleted', () => {
    const store = storeOf(cm('u1', 'a', 'one'), cm('u2', 'b', 'one'));
    expect(store.named('a', 'one')?.metadata?.uid).toBe('u1');
    store.delete('u1');
    expect(store.named('a', 'one')).toBeUndefined();
    expect(store.named('b', 'one')?.metadata?.uid).toBe('u2');
    expect([...store.inNamespace('a')]).toEqual([]);
  });

  test('a recreated object listed before the old one is dropped keeps its name entry', () => {
    const store = storeOf(cm('old', 'a', 'one'));
    store.set('new', cm('new', 'a', 'one'));
    store.delete('old');
    expect(store.named('a', 'one')?.metadata?.uid).toBe('new');
  });
});

describe('reading the cache', () => {
  const a: ScopedStore = {
    namespace: 'a',
    store: storeOf(cm('u1', 'a', 'one', { app: 'db' }), cm('u2', 'a', 'two', { app: 'web' })),
  };
  const b: ScopedStore = { namespace: 'b', store: storeOf(cm('u3', 'b', 'one', { app: 'db' })) };

  test('get answers from the store of the object’s namespace, with the store’s own object', () => {
    expect(readObject([a, b], 'b', 'one', everywhere)).toBe(b.store.get('u3'));
    expect(readObject([a, b], 'a', 'one', everywhere)).toBe(a.store.get('u1'));
    expect(readObject([a, b], 'c', 'one', everywhere)).toBeUndefined();
  });

  test('list without a namespace covers every store, each object once when stores overlap', () => {
    const cluster: ScopedStore = {
      namespace: undefined,
      store: storeOf(a.store.get('u1')!, b.store.get('u3')!),
    };
    expect(names(listObjects([a, b, cluster], {}, everywhere))).toEqual([
      'a/one',
      'a/two',
      'b/one',
    ]);
  });

  test('list filters by namespace and by label selector', () => {
    expect(names(listObjects([a, b], { namespace: 'a' }, everywhere))).toEqual(['a/one', 'a/two']);
    expect(names(listObjects([a, b], { labelSelector: 'app=db' }, everywhere))).toEqual([
      'a/one',
      'b/one',
    ]);
    expect(names(listObjects([a, b], { labelSelector: 'app in (web,api)' }, everywhere))).toEqual([
      'a/two',
    ]);
    expect(
      names(listObjects([a, b], { namespace: 'b', labelSelector: 'app!=db' }, everywhere)),
    ).toEqual([]);
  });

  test('a cluster-wide store shows only namespaces the operator serves (tenant isolation)', () => {
    const cluster: ScopedStore = {
      namespace: undefined,
      store: storeOf(cm('u1', 'team-a', 'one'), cm('u2', 'other', 'one')),
    };
    const served = (namespace: string): boolean => namespace.startsWith('team-');
    expect(readObject([cluster], 'other', 'one', served)).toBeUndefined();
    expect(readObject([cluster], 'team-a', 'one', served)?.metadata?.uid).toBe('u1');
    expect(names(listObjects([cluster], {}, served))).toEqual(['team-a/one']);
    expect(listObjects([cluster], { namespace: 'other' }, served)).toEqual([]);
  });

  test('a label selector it cannot read is an error naming it', () => {
    expect(() => listObjects([a], { labelSelector: 'app=(' }, everywhere)).toThrow(
      /invalid label selector 'app=\('/,
    );
  });
});
