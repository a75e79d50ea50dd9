import { applyMergePatch, mergeInto, prune, type Patch } from '../intents/patch.js';
import type { FieldPath } from '../objects/field-path.js';
import type { KubeObject } from '../objects/kube-object.js';
import { diff } from '../state/diff.js';
import { chooseDiffBase, chooseProgress } from '../state/bookkeeping.js';
import { essenceOf, serializeDiffBase } from '../state/essence.js';
import { Identity, markerToWrite } from '../state/identity.js';
import {
  changeTag,
  serializeProgress,
  type ChangeReason,
  type ProgressRecord,
} from '../state/progress.js';
import {
  annotationValues,
  otherStorage,
  statusValues,
  storesAny,
  type BookkeepingValues,
  type Storage,
} from '../state/storage.js';
import { isPlainObject } from '../objects/plain-object.js';

/** What one run of the handlers for a cause leaves to write. */
export interface ChangePatchInput {
  /** The object as the handlers saw it. */
  body: KubeObject;
  /** The handlers' patches, in the order they ran. */
  patches: readonly Patch[];
  reason: ChangeReason;
  /** Every change handler of the resource, by id (a finished cause purges all their records). */
  handlerIds: readonly string[];
  /** The handlers selected for this cause, by id. */
  selectedIds: readonly string[];
  /** This run's progress records, by handler id. */
  records: ReadonlyMap<string, ProgressRecord>;
  /** Every selected handler is finished. */
  done: boolean;
  /** Done, but a delete handler's final failure keeps the object. */
  blocked: boolean;
  /** Fields watched outside the essence, kept in the diff-base too. */
  extraFields: readonly FieldPath[];
  /** Whose bookkeeping this is (its keys, and its marker). Default: the default identity. */
  identity?: Identity;
  /** Where the bookkeeping is written (the other place is read too, and cleared when written anyway). Default: annotations. */
  storage?: Storage;
  /** Whether the resource has a status subresource (then `status` is written apart from the rest). Default: true. */
  hasStatus?: boolean;
}

/**
 * The one merge patch a run writes (pure): the handlers' patches merged, then the framework's
 * bookkeeping in the configured `storage` (annotations, or `status["<identity>"]`). While the cause
 * is open, the changed progress records; once it is done, the purge of every record except final
 * failures, and the new diff-base. Records left in the other place (before a switch of storage) are
 * removed only when that place is written anyway (a write of the handlers'), never at the cost of a
 * write of their own; a new diff-base then names the one it supersedes there. An identity of its own
 * adds its marker (`<prefix>/konductor-managed`) to any write of its bookkeeping in annotations.
 */
export function changePatch(input: ChangePatchInput): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const patch of input.patches) mergeInto(merged, patch);
  // The diff-base includes everything the handlers wrote (status too), so their own writes never
  // look like a change to a field handler when they come back. Empty parts of the patch (the
  // `labels: {}` every patch starts with) must not appear in it as fields the object lacks.
  const handled = applyMergePatch(input.body, prune(merged) ?? {});
  const identity = input.identity ?? Identity.DEFAULT;
  const storage = input.storage ?? 'annotations';
  const other = otherStorage(storage);
  const { status, ...rest } = merged;
  const writesStatus = prune(isPlainObject(status) ? status : {}) !== undefined;
  const writesMain = prune(rest) !== undefined;
  // A place is written anyway when the handlers' patch goes there (without a subresource, all goes in one write).
  const otherWritten =
    input.hasStatus === false
      ? writesStatus || writesMain
      : other === 'status'
        ? writesStatus
        : writesMain;
  const { target, cleared } = bookkeeping(input, handled, identity, otherWritten);
  const existing = input.body.metadata?.annotations;
  const annotations =
    storage === 'annotations'
      ? annotationValues(identity, target)
      : otherWritten
        ? annotationValues(identity, cleared)
        : {};
  // Written with the first bookkeeping, so other operators never see these keys without it.
  if (storage === 'annotations' && storesAny(target))
    Object.assign(annotations, markerToWrite(identity, existing));
  mergeInto(merged, { metadata: { annotations } });
  const section =
    storage === 'status'
      ? statusValues(identity, target)
      : otherWritten
        ? statusValues(identity, cleared)
        : undefined;
  if (section !== undefined) mergeInto(merged, { status: section });
  return merged;
}

/** What the run leaves to write in the configured place (`target`) and to clear in the other (`cleared`). */
function bookkeeping(
  input: ChangePatchInput,
  handled: KubeObject,
  identity: Identity,
  otherWritten: boolean,
): { target: BookkeepingValues; cleared: BookkeepingValues } {
  const { body, reason, records, done, blocked } = input;
  const storage = input.storage ?? 'annotations';
  const other = otherStorage(storage);
  const target: BookkeepingValues = { progress: new Map() };
  const cleared: BookkeepingValues = { progress: new Map() };
  /** Stores `value` (or removes it, for null) in the configured place; clears the other place when it is written anyway. */
  const put = (id: string, value: string | null): void => {
    const stored = chooseProgress(body, identity, storage, id).stored;
    const clearing = otherWritten && stored[other] !== undefined;
    // A record unchanged in the other place stays there (it counts: see `chooseProgress`) unless that place is cleared.
    const kept =
      value === null
        ? stored[storage] === undefined
        : stored[storage] === value || (stored[other] === value && !clearing);
    if (!kept) target.progress.set(id, value);
    if (clearing) cleared.progress.set(id, null);
  };
  if (done && reason !== 'delete') {
    // Purge every progress record (this cause's or an abandoned one's), except final failures: those
    // stay so users can read what went wrong (`message`) until the next change. A resume is no
    // change, so the failures of earlier handlers stay through restarts too.
    for (const id of input.handlerIds) {
      const record = records.get(id);
      if (
        !record &&
        reason === 'resume' &&
        chooseProgress(body, identity, storage, id).record?.failure
      )
        continue;
      put(id, record?.failure ? serializeProgress(record) : null);
    }
    const handledEssence = essenceOf(handled, input.extraFields, identity);
    const base = chooseDiffBase(body, identity, storage);
    const otherText = base.stored[other];
    // An equal diff-base stays as it is, even one stored before diff-bases named their uid: a restart
    // on an unchanged world writes nothing.
    if (base.essence === undefined || diff(base.essence, handledEssence).length > 0) {
      // The other place keeps its older diff-base unless written anyway: the new one names it, so it counts.
      const supersedes =
        !otherWritten && otherText !== undefined ? changeTag(otherText) : undefined;
      const text = serializeDiffBase(handledEssence, body.metadata?.uid, supersedes);
      if (base.stored[storage] !== text) target.diffBase = text;
    } else if (
      otherWritten &&
      otherText !== undefined &&
      base.place === other &&
      base.raw !== undefined
    ) {
      target.diffBase = base.raw; // moved here, as the other place is cleared
    }
    if (otherWritten && otherText !== undefined) cleared.diffBase = null;
  } else if (!done || blocked) {
    // Pending records, or the failure that keeps a deleted object: users read its message there.
    for (const id of input.selectedIds) {
      const record = records.get(id);
      if (record) put(id, serializeProgress(record));
    }
  }
  return { target, cleared };
}
