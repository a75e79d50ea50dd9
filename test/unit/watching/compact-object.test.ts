import { withoutManagedFields } from '../../../src/framework/watching/compact-object.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

describe('withoutManagedFields', () => {
  test('removes metadata.managedFields and keeps every other metadata field, in order', () => {
    const object: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', namespace: 'ns', managedFields: [{ manager: 'kubectl' }], resourceVersion: '7', uid: 'u' },
    };

    const result = withoutManagedFields(object);

    expect(result).toBe(object);
    expect(Object.keys(result.metadata ?? {})).toEqual(['name', 'namespace', 'resourceVersion', 'uid']);
    expect(result.metadata).toEqual({ name: 'a', namespace: 'ns', resourceVersion: '7', uid: 'u' });
  });

  test('leaves an object without managedFields (or without metadata) as it is', () => {
    const metadata = { name: 'a' };
    const object: KubeObject = { metadata };
    expect(withoutManagedFields(object).metadata).toBe(metadata);
    expect(withoutManagedFields({ kind: 'X' })).toEqual({ kind: 'X' });
  });
});
