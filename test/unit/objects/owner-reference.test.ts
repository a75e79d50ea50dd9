import { adopt, ownerReference } from '../../../src/framework/objects/owner-reference.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

function evc(overrides: Partial<NonNullable<KubeObject['metadata']>> = {}): KubeObject {
  return {
    apiVersion: 'kopf.dev/v1',
    kind: 'EphemeralVolumeClaim',
    metadata: { name: 'my-claim', namespace: 'apps', uid: 'uid-1', ...overrides },
  };
}

function pvc(metadata: KubeObject['metadata'] = { name: 'my-claim' }): KubeObject {
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata };
}

describe('ownerReference', () => {
  test('points at the owner as controller, blocking its deletion, by default (Kopf)', () => {
    expect(ownerReference(evc())).toEqual({
      apiVersion: 'kopf.dev/v1',
      kind: 'EphemeralVolumeClaim',
      name: 'my-claim',
      uid: 'uid-1',
      controller: true,
      blockOwnerDeletion: true,
    });
  });

  test('can be a plain, non-blocking owner', () => {
    expect(ownerReference(evc(), { controller: false, blockOwnerDeletion: false })).toMatchObject({
      controller: false,
      blockOwnerDeletion: false,
    });
  });

  test('refuses an owner without uid, saying to pass the object the API server returned', () => {
    expect(() => ownerReference(evc({ uid: undefined }))).toThrow(
      /EphemeralVolumeClaim apps\/my-claim: the owner has no metadata.uid; pass the owner as the API server returned it/,
    );
  });
});

describe('adopt', () => {
  test('adds the owner reference and returns the child itself', () => {
    const child = pvc();
    expect(adopt(child, evc())).toBe(child);
    expect(child.metadata?.ownerReferences).toEqual([ownerReference(evc())]);
  });

  test('takes the namespace of a namespaced owner when the child has none', () => {
    expect(adopt(pvc(), evc()).metadata?.namespace).toBe('apps');
  });

  test('leaves the namespace unset under a cluster-scoped owner', () => {
    const owner: KubeObject = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'apps', uid: 'ns-uid' },
    };
    expect(adopt(pvc({ name: 'volume' }), owner).metadata?.namespace).toBeUndefined();
  });

  test('refuses a child in another namespace than its namespaced owner, naming both and what to do', () => {
    expect(() => adopt(pvc({ name: 'my-claim', namespace: 'other' }), evc())).toThrow(
      'cannot adopt PersistentVolumeClaim other/my-claim by EphemeralVolumeClaim apps/my-claim: an owner in namespace apps can own only objects of its namespace; create the child in apps or leave its namespace unset',
    );
  });

  test('replaces the reference to the same owner in place rather than adding a second', () => {
    const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'cfg', uid: 'uid-0' };
    const child = pvc({
      name: 'my-claim',
      ownerReferences: [other, { ...ownerReference(evc()), blockOwnerDeletion: false }],
    });
    adopt(child, evc());
    expect(child.metadata?.ownerReferences).toEqual([other, ownerReference(evc())]);
  });

  test('refuses an owner without uid, naming the child and the owner', () => {
    expect(() => adopt(pvc(), evc({ uid: undefined }))).toThrow(
      /^cannot adopt PersistentVolumeClaim my-claim by EphemeralVolumeClaim apps\/my-claim: the owner has no metadata.uid/,
    );
  });

  test('refuses a second controller of another uid, and says to pass controller: false', () => {
    const child = pvc({
      name: 'my-claim',
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'uid-9', controller: true },
      ],
    });
    expect(() => adopt(child, evc())).toThrow(
      /already controlled by Deployment web \(uid uid-9\).*pass \{ controller: false \}/,
    );
  });

  test('adds a plain owner next to an existing controller with controller: false', () => {
    const controller = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'web',
      uid: 'uid-9',
      controller: true,
    };
    const child = adopt(pvc({ name: 'my-claim', ownerReferences: [controller] }), evc(), {
      controller: false,
    });
    expect(child.metadata?.ownerReferences).toEqual([
      controller,
      ownerReference(evc(), { controller: false }),
    ]);
  });

  test('copies no labels unless asked', () => {
    expect(adopt(pvc(), evc({ labels: { app: 'db' } })).metadata?.labels).toBeUndefined();
  });

  test("with labels: true copies the owner's labels without overwriting the child's own", () => {
    const child = adopt(
      pvc({ name: 'my-claim', labels: { app: 'mine' } }),
      evc({ labels: { app: 'db', tier: 'gold' } }),
      { labels: true },
    );
    expect(child.metadata?.labels).toEqual({ app: 'mine', tier: 'gold' });
  });

  test('gives a child without metadata the owner reference and namespace', () => {
    const child: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap' };
    adopt(child, evc());
    expect(child.metadata).toEqual({ namespace: 'apps', ownerReferences: [ownerReference(evc())] });
  });
});

describe('a refused adoption', () => {
  test('leaves the child as it was', () => {
    const child = pvc({
      name: 'my-claim',
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'uid-9', controller: true },
      ],
    });
    const before = structuredClone(child);
    expect(() => adopt(child, evc({ labels: { app: 'db' } }), { labels: true })).toThrow(
      /already controlled/,
    );
    expect(child).toEqual(before);
  });
});
