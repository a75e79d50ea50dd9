import { applyMergePatch, mergeInto, prune, type Patch } from '../handler/patch.js';
import type { FieldPath } from '../objects/field-path.js';
import type { KubeObject } from '../objects/kube-object.js';
import { diff } from '../state/diff.js';
import { essenceOf, inspectDiffBase, serializeDiffBase } from '../state/essence.js';
import { Identity, markerToWrite } from '../state/identity.js';
import { readProgress, serializeProgress, type ChangeReason, type ProgressRecord } from '../state/progress.js';

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
}

/**
 * The one merge patch a run writes (pure): the handlers' patches merged, then the framework's
 * annotations. While the cause is open, the changed progress records; once it is done, the purge of
 * every record except final failures, and the new diff-base. An identity of its own adds its marker
 * (`<prefix>/konductor-managed`) to any write of its bookkeeping, when the object lacks it.
 */
export function changePatch(input: ChangePatchInput): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const patch of input.patches) mergeInto(merged, patch);
  // The diff-base includes everything the handlers wrote (status too), so their own writes never
  // look like a change to a field handler when they come back. Empty parts of the patch (the
  // `labels: {}` every patch starts with) must not appear in it as fields the object lacks.
  const handled = applyMergePatch(input.body, prune(merged) ?? {});
  mergeInto(merged, { metadata: { annotations: progressAnnotations(input, handled) } });
  return merged;
}

function progressAnnotations(input: ChangePatchInput, handled: KubeObject): Record<string, string | null> {
  const { body, reason, records, done, blocked } = input;
  const identity = input.identity ?? Identity.DEFAULT;
  const meta = body.metadata ?? {};
  const annotations: Record<string, string | null> = {};
  const existing = meta.annotations ?? {};
  if (done && reason !== 'delete') {
    // Purge every progress record (this cause's or an abandoned one's), except final failures: those
    // stay so users can read what went wrong (`message`) until the next change. A resume is no
    // change, so the failures of earlier handlers stay through restarts too.
    for (const id of input.handlerIds) {
      const key = identity.progressKey(id);
      const record = records.get(id);
      if (!record && reason === 'resume' && readProgress(body, id, identity)?.failure) continue;
      if (record?.failure) {
        const value = serializeProgress(record);
        if (existing[key] !== value) annotations[key] = value;
      } else if (existing[key] !== undefined) {
        annotations[key] = null;
      }
    }
    const handledEssence = essenceOf(handled, input.extraFields, identity);
    // An equal diff-base stays as it is, even one stored before diff-bases named their uid: a restart
    // on an unchanged world writes nothing.
    const stored = inspectDiffBase(body, identity).essence;
    if (stored === undefined || diff(stored, handledEssence).length > 0) annotations[identity.diffBaseKey] = serializeDiffBase(handledEssence, meta.uid);
  } else if (!done || blocked) {
    // Pending records, or the failure that keeps a deleted object: users read its message there.
    for (const id of input.selectedIds) {
      const record = records.get(id);
      if (!record) continue;
      const value = serializeProgress(record);
      const key = identity.progressKey(id);
      if (existing[key] !== value) annotations[key] = value;
    }
  }
  // Written with the first bookkeeping, so other operators never see these keys without it.
  if (Object.values(annotations).some((value) => value !== null)) Object.assign(annotations, markerToWrite(identity, existing));
  return annotations;
}
