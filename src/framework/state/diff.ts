import { getField, type FieldPath } from '../objects/field-path.js';
import { isPlainObject } from '../objects/plain-object.js';

/** One difference between two values: `add`, `change` or `remove` at a path. Lists compare as whole values. */
export interface DiffItem {
  /** What happened at `path`. */
  op: 'add' | 'change' | 'remove';
  /** The keys from the root to the value (`['spec', 'size']`). */
  path: readonly string[];
  /** The value before; undefined for `add`. */
  old: unknown;
  /** The value after; undefined for `remove`. */
  new: unknown;
}

/** A list of differences; empty when equal. */
export type Diff = readonly DiffItem[];

/** Deep equality for JSON values. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every(
      (key) => Object.prototype.hasOwnProperty.call(b, key) && jsonEqual(a[key], b[key]),
    );
  }
  return false;
}

/** Differences between two JSON values, recursing into objects, sorted by path for stable output. */
export function diff(old: unknown, current: unknown, path: readonly string[] = []): Diff {
  if (jsonEqual(old, current)) return [];
  if (isPlainObject(old) && isPlainObject(current)) {
    const keys = [...new Set([...Object.keys(old), ...Object.keys(current)])].sort();
    return keys.flatMap((key) => diff(old[key], current[key], [...path, key]));
  }
  if (old === undefined) return [{ op: 'add', path, old: undefined, new: current }];
  if (current === undefined) return [{ op: 'remove', path, old, new: undefined }];
  return [{ op: 'change', path, old, new: current }];
}

/** The part of a diff under `field`, with paths relative to it. */
export function narrowDiff(changes: Diff, field: FieldPath): Diff {
  const result: DiffItem[] = [];
  for (const item of changes) {
    const isUnder = field.every((key, i) => item.path[i] === key);
    if (isUnder) {
      result.push({ ...item, path: item.path.slice(field.length) });
    } else if (field.slice(0, item.path.length).every((key, i) => item.path[i] === key)) {
      // A change above the field (e.g. `spec` replaced as a whole) touches it: project onto the field.
      const rest = field.slice(item.path.length);
      const oldValue = getField(item.old, rest);
      const newValue = getField(item.new, rest);
      result.push(...diff(oldValue, newValue));
    }
  }
  return result;
}
