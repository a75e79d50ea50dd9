import type { KubeObject } from '../objects/kube-object.js';

/**
 * The object without `metadata.managedFields`, as a shallow copy with a new `metadata`; `object` itself
 * is left as it is (the same object is returned when it has no managedFields). Server-side apply
 * bookkeeping is often half of an object's JSON, no handler reads it, and the operator holds thousands
 * of objects (watch store, queued events, its own writes awaiting their watch echo).
 *
 * Copying rather than `delete`: deleting a property turns `metadata` into a dictionary-mode object in
 * V8, measured 440 bytes more per stored object than the fast object built here, about the size of the
 * object's own JSON.
 */
export function withoutManagedFields<O extends KubeObject>(object: O): O {
  const metadata: unknown =
    typeof object === 'object' && object !== null ? object.metadata : undefined;
  if (
    typeof metadata !== 'object' ||
    metadata === null ||
    !Object.hasOwn(metadata, 'managedFields')
  )
    return object;
  const { managedFields: _dropped, ...rest } = metadata as NonNullable<KubeObject['metadata']>;
  return { ...object, metadata: rest };
}
