import type { JsonPatchOp } from '../api/object-api.js';
import type { KubeObject } from '../objects/kube-object.js';
import { Identity } from './identity.js';

/** Whether the object carries the finalizer of `identity`. */
export function hasFinalizer(object: KubeObject, identity: Identity = Identity.DEFAULT): boolean {
  return object.metadata?.finalizers?.includes(identity.finalizer) ?? false;
}

/**
 * JSON patch adding the finalizer of `identity`. Guarded by `test` so a concurrent change by another controller
 * makes it fail (422) instead of clobbering: the current list when there is one, else the resourceVersion.
 */
export function addFinalizerOps(
  object: KubeObject,
  identity: Identity = Identity.DEFAULT,
): JsonPatchOp[] {
  const current = object.metadata?.finalizers;
  if (current) {
    return [
      { op: 'test', path: '/metadata/finalizers', value: current },
      { op: 'add', path: '/metadata/finalizers/-', value: identity.finalizer },
    ];
  }
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: object.metadata?.resourceVersion },
    { op: 'add', path: '/metadata/finalizers', value: [identity.finalizer] },
  ];
}

/** JSON patch removing every copy of the finalizer of `identity`, each guarded by a `test` of that exact entry. */
export function removeFinalizerOps(
  object: KubeObject,
  identity: Identity = Identity.DEFAULT,
): JsonPatchOp[] {
  const finalizer = identity.finalizer;
  const current = object.metadata?.finalizers ?? [];
  const ops: JsonPatchOp[] = [];
  // Highest index first, so earlier removals do not shift the later ones.
  for (let i = current.length - 1; i >= 0; i--) {
    if (current[i] === finalizer) {
      ops.push(
        { op: 'test', path: `/metadata/finalizers/${i}`, value: identity.finalizer },
        { op: 'remove', path: `/metadata/finalizers/${i}` },
      );
    }
  }
  return ops;
}
