// The merge-patch types live with the object shapes, so the API client types its patches too.
export type { MergePatch, MergePatchValue } from '../objects/merge-patch.js';
import type { MergePatch } from '../objects/merge-patch.js';
import { isPlainObject } from '../objects/plain-object.js';

/**
 * The changes a handler asks for, sent as a JSON merge patch after it returns:
 * `patch.status.phase = 'Ready'`, `patch.metadata.labels.tier = 'gold'`, `patch.spec.size = null` (deletes).
 * `status` goes to the status subresource when the resource has one. `Spec` and `Status` type
 * `patch.spec` and `patch.status` (so `patch.status.phase = 42` does not compile where phase is a string).
 */
export interface Patch<Spec = Record<string, unknown>, Status = Record<string, unknown>> {
  /** Metadata changes; `labels` and `annotations` are always there to assign to. */
  metadata: {
    /** Labels to set; `null` removes one. */
    labels: Record<string, string | null>;
    /** Annotations to set; `null` removes one. */
    annotations: Record<string, string | null>;
    [key: string]: unknown;
  };
  /** Spec changes. */
  spec: MergePatch<Spec>;
  /** Status changes, written to the status subresource when the resource has one. */
  status: MergePatch<Status>;
  [key: string]: unknown;
}

export function emptyPatch(): Patch {
  return { metadata: { labels: {}, annotations: {} }, spec: {}, status: {} };
}

/** The patch without empty objects; undefined when nothing is left. */
export function prune(value: Record<string, unknown>): Record<string, unknown> | undefined {
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined) continue;
    if (isPlainObject(item)) {
      const inner = prune(item);
      if (inner !== undefined) result[key] = inner;
    } else {
      result[key] = item;
    }
  }
  return Object.keys(result).length > 0 ? result : undefined;
}

/**
 * Whether the patch sets no field at any depth: only empty objects and `undefined` (the empty patch a
 * handler starts from has empty sections). True exactly when {@link prune} leaves nothing, without building
 * the pruned copy. `null` (a deletion), arrays and scalars are changes.
 */
export function isEmptyPatch(patch: Record<string, unknown>): boolean {
  for (const value of Object.values(patch)) {
    if (value === undefined) continue;
    if (!isPlainObject(value) || !isEmptyPatch(value)) return false;
  }
  return true;
}

/** Applies an RFC 7386 merge patch to a copy of `target` (null deletes, arrays replace). */
export function applyMergePatch<T>(target: T, patch: Record<string, unknown>): T {
  const base: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete base[key];
    else if (isPlainObject(value)) base[key] = applyMergePatch(base[key], value);
    else base[key] = value;
  }
  return base as T;
}

/** Merges `extra` into `into` (both merge patches), deeply. */
export function mergeInto(into: Record<string, unknown>, extra: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(extra)) {
    const current = into[key];
    if (isPlainObject(value) && isPlainObject(current)) mergeInto(current, value);
    // Copy objects rather than share them: a later merge into `into` must not write into `extra`.
    else if (isPlainObject(value)) {
      const copy: Record<string, unknown> = {};
      mergeInto(copy, value);
      into[key] = copy;
    } else into[key] = value;
  }
}
