import {
  collectionPath,
  LEASES,
  NAMESPACES,
  namespacedCollectionPath,
  objectPath,
} from '../../../src/framework/api/resource.js';

describe('resource paths', () => {
  it('a namespaced collection in one namespace encodes the namespace', () => {
    expect(collectionPath(LEASES, 'team-a')).toBe(
      '/apis/coordination.k8s.io/v1/namespaces/team-a/leases',
    );
  });

  it('a namespaced collection with no namespace spans every namespace', () => {
    expect(collectionPath(LEASES)).toBe('/apis/coordination.k8s.io/v1/leases');
  });

  it('the one-namespace path refuses an empty namespace instead of spanning every namespace', () => {
    expect(() => namespacedCollectionPath(LEASES, '')).toThrow(/refusing namespace ""/);
  });

  it('the one-namespace path refuses a cluster-scoped resource', () => {
    expect(() => namespacedCollectionPath(NAMESPACES, 'team-a')).toThrow(
      'namespaces/v1 is cluster-scoped',
    );
  });

  it('an object path encodes its name', () => {
    expect(objectPath(NAMESPACES, undefined, 'a/b')).toBe('/api/v1/namespaces/a%2Fb');
  });

  it('an object path refuses "..", which would climb out of the collection', () => {
    expect(() => objectPath(LEASES, 'team-a', '..')).toThrow(/refusing name "\.\."/);
  });
});
