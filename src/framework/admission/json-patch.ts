import type { JsonPatchOp } from '../api/object-api.js';
import { isPlainObject } from '../objects/plain-object.js';

/**
 * RFC 6902 operations that turn `original` into `changed` (both JSON values, as parsed or built from
 * parsed JSON): `add` for new keys, `remove` for keys gone (a key holding `undefined` counts as
 * absent), `replace` for changed values. Objects are compared key by key; arrays that differ at all
 * are replaced whole, as merge patches replace them, so an index never points into an array that
 * changed under it. Equal inputs give no operation.
 */
export function jsonPatchDiff(original: unknown, changed: unknown): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  diffInto(ops, '', original, changed);
  return ops;
}

/** One JSON-pointer reference token (RFC 6901): `~` as `~0`, `/` as `~1`, in that order. */
export function pointerToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function diffInto(ops: JsonPatchOp[], path: string, before: unknown, after: unknown): void {
  if (isPlainObject(before) && isPlainObject(after)) {
    for (const [key, value] of Object.entries(before)) {
      if (
        value !== undefined &&
        (!Object.prototype.hasOwnProperty.call(after, key) || after[key] === undefined)
      ) {
        ops.push({ op: 'remove', path: `${path}/${pointerToken(key)}` });
      }
    }
    for (const [key, value] of Object.entries(after)) {
      if (value === undefined) continue;
      const child = `${path}/${pointerToken(key)}`;
      const previous = Object.prototype.hasOwnProperty.call(before, key) ? before[key] : undefined;
      if (previous === undefined) ops.push({ op: 'add', path: child, value });
      else diffInto(ops, child, previous, value);
    }
    return;
  }
  if (!jsonEqual(before, after)) ops.push({ op: 'replace', path, value: after });
}

/** Deep equality of JSON values; `undefined` object members count as absent. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, index) => jsonEqual(item, b[index]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keysA = Object.keys(a).filter((key) => a[key] !== undefined);
    const keysB = Object.keys(b).filter((key) => b[key] !== undefined);
    return (
      keysA.length === keysB.length &&
      keysA.every(
        (key) => Object.prototype.hasOwnProperty.call(b, key) && jsonEqual(a[key], b[key]),
      )
    );
  }
  return false;
}
