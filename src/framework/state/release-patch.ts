/**
 * What to remove from one object so that an operator lets go of it (`konductor disconnect`): its
 * finalizer, every annotation under its prefix (diff-base, handler progress, timer schedules, the
 * `konductor-managed` marker) and its `status["<identity>"]` record. Both storages are cleared
 * whichever the operator used, and nothing of another identity is touched. Pure: the caller reads the
 * object, sends the patches and retries on a conflict.
 */
import type { JsonPatchOp } from '../api/object-api.js';
import type { KubeObject } from '../objects/kube-object.js';
import { removeFinalizerOps } from './finalizers.js';
import type { Identity } from './identity.js';
import { isPlainObject } from '../objects/plain-object.js';

/** The writes that release one object; absent when it carries nothing of the identity. */
export interface ReleasePatch {
  /**
   * JSON patch on the object: each copy of the finalizer (guarded by a `test` of that entry), each
   * bookkeeping annotation, and the status record when the resource has no status subresource. A
   * `remove` of something already gone fails (422), so a concurrent change is re-read, never clobbered.
   * Empty when only the status subresource needs a write.
   */
  objectOps: JsonPatchOp[];
  /** Merge patch for the `status` subresource removing `status["<identity>"]`, when there is one to remove. */
  statusPatch?: Record<string, unknown>;
  /** What goes, for the one line a user reads. */
  removes: { finalizer: boolean; annotations: string[]; statusRecord: boolean };
}

/**
 * The patch that releases `object` from `identity`, or undefined when it carries none of the
 * identity's finalizer, annotations or status record (so a second run writes nothing).
 * `hasStatusSubresource` says where the status record is written: through `/status`, or with the
 * object itself.
 */
export function releasePatch(
  object: KubeObject,
  identity: Identity,
  options: { hasStatusSubresource: boolean },
): ReleasePatch | undefined {
  const finalizerOps = removeFinalizerOps(object, identity);
  const annotations = Object.keys(object.metadata?.annotations ?? {})
    .filter((key) => identity.isFrameworkKey(key))
    .sort();
  const status: unknown = object.status;
  const statusRecord = isPlainObject(status) && Object.hasOwn(status, identity.statusKey);
  if (finalizerOps.length === 0 && annotations.length === 0 && !statusRecord) return undefined;

  const objectOps: JsonPatchOp[] = [
    ...annotations.map((key): JsonPatchOp => ({
      op: 'remove',
      path: `/metadata/annotations/${pointerSegment(key)}`,
    })),
  ];
  let statusPatch: Record<string, unknown> | undefined;
  if (statusRecord) {
    if (options.hasStatusSubresource) statusPatch = { status: { [identity.statusKey]: null } };
    else objectOps.push({ op: 'remove', path: `/status/${pointerSegment(identity.statusKey)}` });
  }
  // The finalizer last: removing it may let a deleted object go, and the rest of the patch is then moot.
  objectOps.push(...finalizerOps);
  return {
    objectOps,
    statusPatch,
    removes: { finalizer: finalizerOps.length > 0, annotations, statusRecord },
  };
}

/** What a release removes, as one short phrase: `finalizer konductor.dev/finalizer, 3 annotations, status["konductor.dev"]`. */
export function describeRelease(release: ReleasePatch, identity: Identity): string {
  const parts: string[] = [];
  if (release.removes.finalizer) parts.push(`finalizer ${identity.finalizer}`);
  const count = release.removes.annotations.length;
  if (count > 0) parts.push(`${count} annotation${count === 1 ? '' : 's'}`);
  if (release.removes.statusRecord) parts.push(`status["${identity.statusKey}"]`);
  return parts.join(', ');
}

/** One JSON-pointer segment (RFC 6901): `~` and `/` escaped, as in annotation keys like `konductor.dev/x`. */
export function pointerSegment(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
