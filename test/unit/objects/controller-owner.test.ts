import { controllerOwnerOf, mayOwn } from '../../../src/framework/objects/controller-owner.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

const widgets = { group: 'test.konductor.dev', kind: 'Widget' };

function configMap(ownerReferences: unknown, namespace = 'team-a'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'settings',
      namespace,
      uid: 'cm-1',
      ownerReferences: ownerReferences as unknown[] | undefined,
    },
  };
}

function reference(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'test.konductor.dev/v1',
    kind: 'Widget',
    name: 'w',
    uid: 'owner-1',
    controller: true,
    ...fields,
  };
}

describe('the owner a child event maps to (controllerOwnerOf)', () => {
  test('is the controller reference of the owner resource: its uid and name', () => {
    expect(controllerOwnerOf(configMap([reference()]), widgets)).toEqual({
      uid: 'owner-1',
      name: 'w',
    });
  });

  test('matches any version of the owner group', () => {
    expect(
      controllerOwnerOf(
        configMap([reference({ apiVersion: 'test.konductor.dev/v1beta1' })]),
        widgets,
      ),
    ).toEqual({ uid: 'owner-1', name: 'w' });
  });

  test('ignores references without controller: true', () => {
    expect(
      controllerOwnerOf(
        configMap([reference({ controller: false }), reference({ controller: undefined })]),
        widgets,
      ),
    ).toBeUndefined();
  });

  test('is the controller even when other references come first', () => {
    const child = configMap([
      reference({ controller: undefined, uid: 'other' }),
      reference({ uid: 'owner-2' }),
    ]);
    expect(controllerOwnerOf(child, widgets)?.uid).toBe('owner-2');
  });

  test('ignores a controller of another kind', () => {
    expect(controllerOwnerOf(configMap([reference({ kind: 'Gadget' })]), widgets)).toBeUndefined();
  });

  test('ignores a controller of the same kind in another group', () => {
    expect(
      controllerOwnerOf(configMap([reference({ apiVersion: 'other.example.com/v1' })]), widgets),
    ).toBeUndefined();
  });

  test('maps core-group owners (apiVersion v1) to the core group', () => {
    const child = configMap([reference({ apiVersion: 'v1', kind: 'Service' })]);
    expect(controllerOwnerOf(child, { group: '', kind: 'Service' })?.uid).toBe('owner-1');
  });

  test('is undefined for children without references or with malformed ones', () => {
    expect(controllerOwnerOf(configMap(undefined), widgets)).toBeUndefined();
    expect(controllerOwnerOf(configMap('not a list'), widgets)).toBeUndefined();
    expect(
      controllerOwnerOf(configMap([null, 7, reference({ uid: 42 })]), widgets),
    ).toBeUndefined();
    expect(controllerOwnerOf(configMap([reference({ uid: '' })]), widgets)).toBeUndefined();
  });
});

describe('whether an owner may own a child (mayOwn)', () => {
  const owner = (namespace?: string): KubeObject => ({
    metadata: { name: 'w', uid: 'owner-1', namespace },
  });

  test('a namespaced owner owns children of its own namespace', () => {
    expect(mayOwn(owner('team-a'), configMap([], 'team-a'))).toBe(true);
  });

  test('a namespaced owner never owns a child in another namespace, whatever uid the child names', () => {
    expect(mayOwn(owner('team-b'), configMap([], 'team-a'))).toBe(false);
  });

  test('a cluster-scoped owner may own children in any namespace', () => {
    expect(mayOwn(owner(undefined), configMap([], 'team-a'))).toBe(true);
  });
});
