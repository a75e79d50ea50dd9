import { isDeepStrictEqual } from 'node:util';
import { describeError } from '../intents/errors.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Patch } from '../intents/patch.js';

/**
 * Kopf's results delivery: what a handler returns, other than `undefined` or `null`, is set at
 * `status[<handler id>]` of its patch, so it goes out in the same status write as the handler's own
 * status changes (and, with status storage, as the bookkeeping). The value is stored as JSON
 * (`JSON.stringify` rules: a `Date` becomes its ISO string, `undefined` object fields are left out);
 * it replaces what the handler itself put at that key. With `current`, a value that object already
 * holds there is not set (a timer returning the same every tick writes nothing for it). Returns why the
 * value cannot be stored (a function, a symbol, a BigInt, a cycle), or undefined when it was stored or
 * there was nothing to store.
 */
export function deliverResult(
  patch: Patch,
  handlerId: string,
  result: unknown,
  current?: KubeObject,
): string | undefined {
  if (result === undefined || result === null) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(result);
  } catch (error) {
    return `handler ${handlerId} returned a value that is not JSON (${describeError(error)}); return JSON data, or nothing`;
  }
  if (json === undefined)
    return `handler ${handlerId} returned a ${typeof result}, which is not JSON; return JSON data, or nothing`;
  const value = JSON.parse(json) as unknown;
  if (current !== undefined && isDeepStrictEqual(value, storedAt(current, handlerId)))
    return undefined;
  (patch.status as Record<string, unknown>)[handlerId] = value;
  return undefined;
}

/** What `status[<handler id>]` of the object holds; undefined when nothing. */
function storedAt(object: KubeObject, handlerId: string): unknown {
  const status = (object as { status?: unknown }).status;
  return typeof status === 'object' && status !== null && Object.hasOwn(status, handlerId)
    ? (status as Record<string, unknown>)[handlerId]
    : undefined;
}
