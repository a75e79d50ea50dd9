/**
 * Where an operator keeps its bookkeeping (the diff-base and handler progress) on an object: in
 * annotations (`<identity>/last-handled-configuration`, `<identity>/<handler>`), or in the status
 * (`status["<identity>"]`), as Kopf's StatusDiffBaseStorage/StatusProgressStorage. Pure readers and
 * patch builders; which place is written is the operator's `storage` setting.
 */
import type { KubeObject } from '../objects/kube-object.js';
import { annotationName } from './annotation-name.js';
import type { Identity } from './identity.js';
import { isPlainObject } from '../objects/plain-object.js';

/** Every place bookkeeping can be kept. */
export const STORAGES = ['annotations', 'status'] as const;

/** Where bookkeeping is kept: `annotations` (the default) or `status`. */
export type Storage = (typeof STORAGES)[number];

/** The storage of an operator that sets none. */
export const DEFAULT_STORAGE: Storage = 'annotations';

/** A storage that is neither `annotations` nor `status`. */
export class InvalidStorageError extends Error {
  override readonly name = 'InvalidStorageError';
}

/** The storage named `raw`, checked; throws {@link InvalidStorageError} naming the value and the choices. */
export function parseStorage(raw: string): Storage {
  const found = STORAGES.find((storage) => storage === raw);
  if (found === undefined) {
    throw new InvalidStorageError(
      `the storage ${JSON.stringify(raw)} is not one of ${STORAGES.join(', ')}: it says where the diff-base and handler progress are kept`,
    );
  }
  return found;
}

/** The place that is not `storage`: read after it, so a switch of storage never re-runs handlers. */
export function otherStorage(storage: Storage): Storage {
  return storage === 'annotations' ? 'status' : 'annotations';
}

/** Inside `status["<identity>"]`: the diff-base, one JSON string (as Kopf: a string is replaced whole, never merged). */
export const STATUS_DIFF_BASE_FIELD = 'last-handled-configuration';
/** Inside `status["<identity>"]`: the progress records, by handler name, each one JSON string as in its annotation. */
export const STATUS_PROGRESS_FIELD = 'progress';

/** One stored text, as read: the text, nothing, or why the place holds something unusable. */
export type StoredText =
  { raw?: string; problem?: undefined } | { raw?: undefined; problem: string };

/** One bookkeeping item: the diff-base, or one handler's progress. */
export type BookkeepingItem =
  { diffBase: true; handlerId?: undefined } | { diffBase?: undefined; handlerId: string };

/** The diff-base item. */
export const DIFF_BASE: BookkeepingItem = { diffBase: true };

/** The name of a handler's progress record inside `status["<identity>"].progress` (the same as in its annotation). */
export function progressName(handlerId: string): string {
  return annotationName(handlerId);
}

/**
 * The stored text of `item` in `place`. Status is anyone's to write (whoever can write the status
 * subresource), so every level is checked: a section or value of the wrong type is a `problem`.
 */
export function storedText(
  object: KubeObject,
  identity: Identity,
  place: Storage,
  item: BookkeepingItem,
): StoredText {
  if (place === 'annotations') {
    const key = item.diffBase ? identity.diffBaseKey : identity.progressKey(item.handlerId);
    const raw = object.metadata?.annotations?.[key];
    return typeof raw === 'string' ? { raw } : {};
  }
  const status: unknown = object.status;
  if (!isPlainObject(status) || !Object.hasOwn(status, identity.statusKey)) return {};
  const section = status[identity.statusKey];
  if (section === null || section === undefined) return {};
  if (!isPlainObject(section))
    return { problem: `status["${identity.statusKey}"] is not an object` };
  let value: unknown;
  if (item.diffBase) {
    value = Object.hasOwn(section, STATUS_DIFF_BASE_FIELD)
      ? section[STATUS_DIFF_BASE_FIELD]
      : undefined;
  } else {
    const progress = Object.hasOwn(section, STATUS_PROGRESS_FIELD)
      ? section[STATUS_PROGRESS_FIELD]
      : undefined;
    if (progress === undefined || progress === null) return {};
    if (!isPlainObject(progress)) return { problem: `${STATUS_PROGRESS_FIELD} is not an object` };
    const name = progressName(item.handlerId);
    value = Object.hasOwn(progress, name) ? progress[name] : undefined;
  }
  if (value === undefined || value === null) return {};
  return typeof value === 'string' ? { raw: value } : { problem: 'not a string' };
}

/** Where `item` lives in `place`, as a user finds it with kubectl: for Warnings and logs. */
export function itemLocation(identity: Identity, place: Storage, item: BookkeepingItem): string {
  if (place === 'annotations')
    return `annotation ${item.diffBase ? identity.diffBaseKey : identity.progressKey(item.handlerId)}`;
  const section = `status["${identity.statusKey}"]`;
  return item.diffBase
    ? `${section}["${STATUS_DIFF_BASE_FIELD}"]`
    : `${section}.${STATUS_PROGRESS_FIELD}["${progressName(item.handlerId)}"]`;
}

/** Bookkeeping values to write in one place: text to store, `null` to remove. Absent items stay as they are. */
export interface BookkeepingValues {
  diffBase?: string | null;
  /** By handler id. */
  progress: Map<string, string | null>;
}

/** Whether `values` changes nothing. */
export function isEmptyValues(values: BookkeepingValues): boolean {
  return values.diffBase === undefined && values.progress.size === 0;
}

/** Whether `values` stores anything (not only removes). */
export function storesAny(values: BookkeepingValues): boolean {
  return (
    typeof values.diffBase === 'string' ||
    [...values.progress.values()].some((value) => value !== null)
  );
}

/** The annotations (merge patch) writing `values`. */
export function annotationValues(
  identity: Identity,
  values: BookkeepingValues,
): Record<string, string | null> {
  const annotations: Record<string, string | null> = {};
  for (const [id, value] of values.progress) annotations[identity.progressKey(id)] = value;
  if (values.diffBase !== undefined) annotations[identity.diffBaseKey] = values.diffBase;
  return annotations;
}

/** The status (merge patch) writing `values` into `status["<identity>"]`; undefined when there is nothing to write. */
export function statusValues(
  identity: Identity,
  values: BookkeepingValues,
): Record<string, unknown> | undefined {
  if (isEmptyValues(values)) return undefined;
  const section: Record<string, unknown> = {};
  if (values.diffBase !== undefined) section[STATUS_DIFF_BASE_FIELD] = values.diffBase;
  if (values.progress.size > 0) {
    section[STATUS_PROGRESS_FIELD] = Object.fromEntries(
      [...values.progress].map(([id, value]) => [progressName(id), value]),
    );
  }
  return { [identity.statusKey]: section };
}
