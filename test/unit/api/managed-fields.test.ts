import { withoutManagedFields } from '../../../src/framework/api/managed-fields.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

describe('withoutManagedFields', () => {
  const managed = (): KubeObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'a',
      namespace: 'ns',
      managedFields: [{ manager: 'kubectl' }],
      resourceVersion: '7',
      uid: 'u',
    },
    data: { k: 'v' },
  });

  test('the result has no managedFields and keeps every other field, in order', () => {
    const result = withoutManagedFields(managed());

    expect(result.metadata).not.toHaveProperty('managedFields');
    expect(Object.keys(result.metadata ?? {})).toEqual([
      'name',
      'namespace',
      'resourceVersion',
      'uid',
    ]);
    expect(result).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', namespace: 'ns', resourceVersion: '7', uid: 'u' },
      data: { k: 'v' },
    });
  });

  test('the input object is untouched', () => {
    const object = managed();
    const metadata = object.metadata;

    withoutManagedFields(object);

    expect(object).toEqual(managed());
    expect(object.metadata).toBe(metadata);
  });

  test('an object without managedFields (or without metadata) is returned as it is', () => {
    const object: KubeObject = { metadata: { name: 'a' } };
    const bare: KubeObject = { kind: 'X' };

    expect(withoutManagedFields(object)).toBe(object);
    expect(withoutManagedFields(bare)).toBe(bare);
  });
});
