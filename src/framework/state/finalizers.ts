import type { JsonPatchOp } from '../api/object-api.js';
import type { KubeObject } from '../objects/kube-object.js';
import { FINALIZER } from './keys.js';

export function hasFinalizer(object: KubeObject): boolean {
  return object.metadata?.finalizers?.includes(FINALIZER) ?? false;
}

/**
 * JSON patch adding our finalizer. Guarded by `test` so a concurrent change by another controller
 * makes it fail (422) instead of clobbering: the current list when there is one, else the resourceVersion.
 */
export function addFinalizerOps(object: KubeObject): JsonPatchOp[] {
  const current = object.metadata?.finalizers;
  if (current) {
    return [
      { op: 'test', path: '/metadata/finalizers', value: current },
      { op: 'add', path: '/metadata/finalizers/-', value: FINALIZER },
    ];
  }
  return [
    { op: 'test', path: '/metadata/resourceVersion', value: object.metadata?.resourceVersion },
    { op: 'add', path: '/metadata/finalizers', value: [FINALIZER] },
  ];
}

/** JSON patch removing every copy of our finalizer, each guarded by a `test` of that exact entry. */
export function removeFinalizerOps(object: KubeObject): JsonPatchOp[] {
  const current = object.metadata?.finalizers ?? [];
  const ops: JsonPatchOp[] = [];
  // Highest index first, so earlier removals do not shift the later ones.
  for (let i = current.length - 1; i >= 0; i--) {
    if (current[i] === FINALIZER) {
      ops.push({ op: 'test', path: `/metadata/finalizers/${i}`, value: FINALIZER }, { op: 'remove', path: `/metadata/finalizers/${i}` });
    }
  }
  return ops;
}
