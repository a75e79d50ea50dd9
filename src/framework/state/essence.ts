import type { KubeObject } from '../objects/kube-object.js';
import { getField, setField, type FieldPath } from '../objects/field-path.js';
import { Identity, isBookkeepingKey } from './identity.js';
import { isPlainObject } from '../objects/plain-object.js';

/** What a change to an object means for handlers: everything but status and server-managed metadata. */
export type Essence = Record<string, unknown>;

const IGNORED_ANNOTATIONS = new Set(['kubectl.kubernetes.io/last-applied-configuration']);

/** The names, under the identity's prefix, of the labels sharding writes (`<identity>/shard`, `<identity>/drain`). */
const SHARD_LABEL_NAMES: ReadonlySet<string> = new Set(['shard', 'drain']);

/**
 * The essence of an object: its body without `apiVersion`, `kind`, `status` and metadata other than
 * labels and annotations that are no Konductor operator's bookkeeping (see `isBookkeepingKey`: this
 * operator's `identity`, the default one, and marked prefixes), plus any `extraFields` (such as
 * `status.phase` watched by a field handler). Comparing essences tells real changes from the echo of
 * our own writes, and from other operators' bookkeeping.
 */
export function essenceOf(
  object: KubeObject,
  extraFields: readonly FieldPath[] = [],
  identity: Identity = Identity.DEFAULT,
): Essence {
  const essence: Essence = {};
  for (const [key, value] of Object.entries(object)) {
    if (key !== 'apiVersion' && key !== 'kind' && key !== 'status' && key !== 'metadata')
      essence[key] = value;
  }
  const all = object.metadata?.annotations ?? {};
  // The shard labels are bookkeeping: an object moving between replicas is no change to handle.
  const labels = Object.fromEntries(
    Object.entries(object.metadata?.labels ?? {}).filter(
      ([key]) =>
        !SHARD_LABEL_NAMES.has(key.slice(identity.prefix.length + 1)) ||
        !identity.isFrameworkKey(key),
    ),
  );
  const annotations = Object.fromEntries(
    Object.entries(all).filter(
      ([key]) => !isBookkeepingKey(key, all, identity) && !IGNORED_ANNOTATIONS.has(key),
    ),
  );
  const metadata: Record<string, unknown> = {};
  if (Object.keys(labels).length > 0) metadata.labels = labels;
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  if (Object.keys(metadata).length > 0) essence.metadata = metadata;
  for (const field of extraFields) {
    const value = getField(object, field);
    if (value !== undefined) setField(essence, field, value);
  }
  // Our own status bookkeeping (status storage) is never a change, even to a handler watching all of `status`.
  const status = essence.status;
  if (isPlainObject(status) && Object.hasOwn(status, identity.statusKey)) {
    const { [identity.statusKey]: _own, ...rest } = status;
    if (Object.keys(rest).length > 0) essence.status = rest;
    else delete essence.status;
  }
  return essence;
}

/**
 * The stored diff-base, checked: `essence` when it is this object's own; `foreign` when it names
 * another object's uid (copied with `kubectl get -o yaml`, restored from a backup), which must not
 * pass for a handled object; `problem` when it is unusable. Diff-bases written before the uid was
 * stored carry none and are taken as the object's own.
 */
export type DiffBaseReading =
  | { essence?: Essence; foreign?: undefined; problem?: undefined; supersedes?: string }
  | { essence?: undefined; foreign: string; problem?: undefined }
  | { essence?: undefined; foreign?: undefined; problem: string };

/** Where the diff-base keeps the uid of the object it was written for (outside the essence's own fields). */
const UID_FIELD = 'uid';
/**
 * Where a diff-base written in one storage keeps the change tag of the diff-base it replaced in the
 * other (while an operator switches storage, both places can hold one): the newer one names the older.
 */
const SUPERSEDES_FIELD = 'supersedes';
const TAG = /^[0-9a-f]{12}$/;

/** Reads and checks the diff-base annotation (see {@link parseDiffBase}). */
export function inspectDiffBase(
  object: KubeObject,
  identity: Identity = Identity.DEFAULT,
): DiffBaseReading {
  const raw = object.metadata?.annotations?.[identity.diffBaseKey];
  return raw === undefined ? {} : parseDiffBase(raw, object.metadata?.uid);
}

/** Checks a stored diff-base text of the object with `uid` (attacker-controlled: never throws). */
export function parseDiffBase(raw: string, uid: string | undefined): DiffBaseReading {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { problem: 'not JSON' };
  }
  if (!isPlainObject(parsed)) return { problem: 'not a JSON object' };
  const essence: Essence = { ...parsed };
  const metadata = essence.metadata;
  if (metadata !== undefined && !isPlainObject(metadata))
    return { problem: 'metadata is not an object' };
  let supersedes: string | undefined;
  if (metadata !== undefined && (UID_FIELD in metadata || SUPERSEDES_FIELD in metadata)) {
    const { [UID_FIELD]: stored, [SUPERSEDES_FIELD]: replaced, ...rest } = metadata;
    if (stored !== undefined && typeof stored !== 'string')
      return { problem: 'metadata.uid is not a string' };
    if (replaced !== undefined && (typeof replaced !== 'string' || !TAG.test(replaced)))
      return { problem: 'metadata.supersedes is not a change tag' };
    if (stored !== undefined && stored !== uid) return { foreign: stored };
    supersedes = replaced;
    if (Object.keys(rest).length > 0) essence.metadata = rest;
    else delete essence.metadata;
  }
  return supersedes === undefined ? { essence } : { essence, supersedes };
}

/** The stored essence from the diff-base annotation; undefined when absent or another object's. Throws when unusable. */
export function readDiffBase(
  object: KubeObject,
  identity: Identity = Identity.DEFAULT,
): Essence | undefined {
  const reading = inspectDiffBase(object, identity);
  if (reading.problem !== undefined)
    throw new Error(`the diff-base annotation is unusable: ${reading.problem}`);
  return reading.essence;
}

/**
 * The stored text of an essence, bound to the object's `uid` when given, and naming the change tag
 * of the diff-base it `supersedes` in the other storage, if any.
 */
export function serializeDiffBase(essence: Essence, uid?: string, supersedes?: string): string {
  if (uid === undefined && supersedes === undefined) return JSON.stringify(essence);
  const metadata = isPlainObject(essence.metadata) ? essence.metadata : {};
  const extra = {
    ...(uid === undefined ? {} : { [UID_FIELD]: uid }),
    ...(supersedes === undefined ? {} : { [SUPERSEDES_FIELD]: supersedes }),
  };
  return JSON.stringify({ ...essence, metadata: { ...metadata, ...extra } });
}
