// Why an object `konductor uninstall` deleted is still there, in words that say what to do. Pure.
import type { KubeObject } from '../../framework/objects/kube-object.js';
import type { Identity } from '../../framework/state/identity.js';
import { parseProgress } from '../../framework/state/progress.js';
import { storedText, STORAGES } from '../../framework/state/storage.js';

/** What is known besides the object itself. */
export interface LeftoverContext {
  identity: Identity;
  /** The live leader of the operator's Lease, described; undefined when no operator runs. */
  operator: string | undefined;
  /** The ids of the resource's delete handlers, whose progress records may hold their last error. */
  deleteHandlerIds: readonly string[];
  /** The error the DELETE request got, if it failed. */
  deleteError?: string;
}

/** The garbage collector's finalizer while it deletes an object's dependents first. */
const FOREGROUND = 'foregroundDeletion';
/** Longest handler error repeated: it comes from the object, which anyone who can edit it writes. */
const MAX_MESSAGE_CHARS = 200;

/** One line saying why `object` is not gone yet, and what would let it go. */
export function whyLeft(object: KubeObject, context: LeftoverContext): string {
  const { identity } = context;
  const metadata = object.metadata ?? {};
  if (metadata.deletionTimestamp === undefined) {
    return context.deleteError !== undefined
      ? `not deleted: ${context.deleteError}`
      : 'not deleted yet (created after the others were deleted)';
  }
  const finalizers = metadata.finalizers ?? [];
  const reasons: string[] = [];
  if (finalizers.includes(identity.finalizer)) {
    if (context.operator === undefined) {
      reasons.push(
        `finalizer ${identity.finalizer} held, no operator running: run konductor disconnect or start the operator`,
      );
    } else {
      const error = lastDeleteError(object, context);
      reasons.push(
        `finalizer ${identity.finalizer} held: the delete handlers of ${context.operator} have not finished` +
          (error ? `; last error: ${error}` : '; see its logs, or wait longer (--timeout)'),
      );
    }
  }
  if (finalizers.includes(FOREGROUND))
    reasons.push(
      `finalizer ${FOREGROUND}: the garbage collector deletes its dependents first (kube-controller-manager must run)`,
    );
  const others = finalizers.filter((f) => f !== identity.finalizer && f !== FOREGROUND);
  if (others.length > 0)
    reasons.push(
      `finalizer${others.length === 1 ? '' : 's'} ${others.map(printable).join(', ')} held by another controller`,
    );
  return reasons.length > 0 ? reasons.join('; ') : 'being deleted (no finalizer left)';
}

/** The last error a delete handler recorded on the object, in either storage; the first one found. */
function lastDeleteError(object: KubeObject, context: LeftoverContext): string | undefined {
  for (const handlerId of context.deleteHandlerIds) {
    for (const place of STORAGES) {
      const raw = storedText(object, context.identity, place, { handlerId }).raw;
      const record = raw === undefined ? undefined : parseProgress(raw).record;
      if (record?.purpose === 'delete' && record.message)
        return `${handlerId}: ${printable(record.message)}`;
    }
  }
  return undefined;
}

/** Text from an object, safe to print on one line. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return line.length > MAX_MESSAGE_CHARS ? `${line.slice(0, MAX_MESSAGE_CHARS - 1)}…` : line;
}
