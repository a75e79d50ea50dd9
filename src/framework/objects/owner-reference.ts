import type { ResourceObject } from './kube-object.js';

/** One entry of `metadata.ownerReferences`: the child names its owner, so garbage collection deletes it with the owner. */
export interface OwnerReference {
  /** The owner's `apiVersion`. */
  apiVersion: string;
  /** The owner's kind. */
  kind: string;
  /** The owner's name; owner and child share a namespace (or the owner is cluster-scoped). */
  name: string;
  /** The owner's uid: a new object of the same name owns nothing. */
  uid: string;
  /** At most one owner reference of an object is its controller. */
  controller?: boolean;
  /** The owner's foreground deletion waits for this child to be gone. */
  blockOwnerDeletion?: boolean;
}

/** Options of {@link ownerReference}. */
export interface OwnerReferenceOptions {
  /** Mark the owner as the child's controller. Default true (Kopf). */
  controller?: boolean;
  /** Make the owner's foreground deletion wait for the child. Default true (Kopf). */
  blockOwnerDeletion?: boolean;
}

/** Options of {@link adopt}. */
export interface AdoptOptions extends OwnerReferenceOptions {
  /** Copy the owner's labels onto the child (never overwriting the child's own). Default false. */
  labels?: boolean;
}

/**
 * The owner reference that points at `owner`. The owner must have been read from the API server
 * (it needs `apiVersion`, `kind`, `metadata.name` and `metadata.uid`).
 *
 * @example
 * ```ts
 * const ref = ownerReference(body);   // { apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true }
 * ```
 */
export function ownerReference(
  owner: ResourceObject,
  options: OwnerReferenceOptions = {},
): OwnerReference {
  return referenceTo(owner, options, `cannot own objects by ${describe(owner)}`);
}

function referenceTo(
  owner: ResourceObject,
  options: OwnerReferenceOptions,
  refusal: string,
): OwnerReference {
  const { apiVersion, kind } = owner;
  const name = owner.metadata?.name;
  const uid = owner.metadata?.uid;
  const missing = [
    !apiVersion && 'apiVersion',
    !kind && 'kind',
    !name && 'metadata.name',
    !uid && 'metadata.uid',
  ].filter(Boolean);
  if (missing.length > 0 || !apiVersion || !kind || !name || !uid) {
    throw new Error(
      `${refusal}: the owner has no ${missing.join(', ')}; pass the owner as the API server returned it (the handler's body), not one built locally`,
    );
  }
  return {
    apiVersion,
    kind,
    name,
    uid,
    controller: options.controller ?? true,
    blockOwnerDeletion: options.blockOwnerDeletion ?? true,
  };
}

/**
 * Makes `owner` the owner of `child`, in place, and returns `child` (Kopf's `kopf.adopt`): adds the
 * owner reference (or replaces the one with the owner's uid), sets the child's namespace from a
 * namespaced owner when it has none, and with `labels: true` copies the owner's labels the child lacks.
 * Garbage collection then deletes the child when the owner is deleted.
 *
 * Refuses, with an Error naming both objects: an owner without uid, a child in another namespace
 * than its namespaced owner (Kubernetes ignores such references), and a second controller when the
 * child already has a controller owner of another uid (pass `controller: false` to add a plain owner).
 *
 * @example
 * ```ts
 * const pvc = adopt({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec }, body, { labels: true });
 * await ctx.client.resource<PersistentVolumeClaim>('v1', 'persistentvolumeclaims').create(pvc);
 * ```
 */
export function adopt<C extends ResourceObject>(
  child: C,
  owner: ResourceObject,
  options: AdoptOptions = {},
): C {
  const refusal = `cannot adopt ${describe(child)} by ${describe(owner)}`;
  const reference = referenceTo(owner, options, refusal);
  // Every check before any change: a refused adoption leaves the child as it was.
  const ownerNamespace = owner.metadata?.namespace;
  const childNamespace = child.metadata?.namespace;
  if (ownerNamespace && childNamespace && childNamespace !== ownerNamespace) {
    throw new Error(
      `${refusal}: an owner in namespace ${ownerNamespace} can own only objects of its namespace; create the child in ${ownerNamespace} or leave its namespace unset`,
    );
  }
  const current = child.metadata?.ownerReferences;
  const references = (Array.isArray(current) ? current : []) as OwnerReference[];
  const other = reference.controller
    ? references.find((ref) => ref.controller === true && ref.uid !== reference.uid)
    : undefined;
  if (other) {
    throw new Error(
      `${refusal}: it is already controlled by ${other.kind} ${other.name} (uid ${other.uid}); an object has one controller, so pass { controller: false } to add ${reference.name} as a plain owner`,
    );
  }
  const metadata = (child.metadata ??= {});
  if (ownerNamespace) metadata.namespace = ownerNamespace;
  // Replaced where it stands: adopting twice leaves the list as it was.
  const at = references.findIndex((ref) => ref.uid === reference.uid);
  metadata.ownerReferences =
    at < 0 ? [...references, reference] : references.map((ref, i) => (i === at ? reference : ref));
  if (options.labels) {
    const ownerLabels = owner.metadata?.labels ?? {};
    if (Object.keys(ownerLabels).length > 0)
      metadata.labels = { ...ownerLabels, ...metadata.labels };
  }
  return child;
}

/** `Kind namespace/name` (or as much of it as the object has), for error messages. */
function describe(object: ResourceObject): string {
  const meta = object.metadata ?? {};
  const name =
    meta.name ?? (typeof meta.generateName === 'string' ? `${meta.generateName}*` : '(unnamed)');
  return `${object.kind ?? 'object'} ${meta.namespace ? `${meta.namespace}/` : ''}${name}`;
}
