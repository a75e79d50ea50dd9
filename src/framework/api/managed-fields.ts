import type { KubeObject } from '../objects/kube-object.js';

/**
 * Drops `metadata.managedFields` in place. Server-side apply bookkeeping is often half of an object's
 * JSON, no handler reads it, and the operator holds thousands of objects (watch store, queued events,
 * its own writes awaiting their watch echo), so keeping it would roughly double resident memory.
 */
export function dropManagedFields<O extends KubeObject>(object: O): O {
  const metadata: unknown = object?.metadata;
  if (typeof metadata === 'object' && metadata !== null) delete (metadata as { managedFields?: unknown }).managedFields;
  return object;
}
