import type { KubeObject } from './kube-object.js';
import { isPlainObject } from './plain-object.js';

/** Which owners count: a resource's API group (`''` for the core group) and kind. */
export interface OwnerKind {
  group: string;
  kind: string;
}

/** The owner a child's controller reference names. */
export interface ControllerOwner {
  uid: string;
  name: string;
}

/**
 * The owner that controls `child`, when it is of `owner`'s group and kind: the child's ownerReference
 * with `controller: true` (the API server allows one), matched by API group and kind, any version.
 * Undefined otherwise: references without `controller: true` (an owner that only keeps the child
 * from garbage collection, not manages it) are ignored, and so is a controller of another kind, as
 * controller-runtime's `Owns()` does. References are read defensively: they are written by whoever
 * may write the child.
 */
export function controllerOwnerOf(
  child: KubeObject,
  owner: OwnerKind,
): ControllerOwner | undefined {
  const references = child.metadata?.ownerReferences;
  if (!Array.isArray(references)) return undefined;
  const controller = references.find(
    (reference): reference is Record<string, unknown> =>
      isPlainObject(reference) && reference.controller === true,
  );
  if (!controller) return undefined;
  const { apiVersion, kind, uid, name } = controller;
  if (
    typeof apiVersion !== 'string' ||
    typeof kind !== 'string' ||
    typeof uid !== 'string' ||
    typeof name !== 'string'
  )
    return undefined;
  if (uid === '' || kind !== owner.kind || groupOf(apiVersion) !== owner.group) return undefined;
  return { uid, name };
}

/**
 * Whether `owner` can own `child`: owner references never cross namespaces, so a namespaced owner
 * must be in the child's namespace; a cluster-scoped owner (no namespace) may own children anywhere.
 * Checked after the uid matched, so a child cannot reach an owner in another namespace by naming its uid.
 */
export function mayOwn(owner: KubeObject, child: KubeObject): boolean {
  const namespace = owner.metadata?.namespace;
  return namespace === undefined || namespace === '' || namespace === child.metadata?.namespace;
}

/** `example.com` of `example.com/v1`; `''` of the core `v1`. */
function groupOf(apiVersion: string): string {
  const slash = apiVersion.lastIndexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}
