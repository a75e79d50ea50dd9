import { isDeepStrictEqual } from 'node:util';
import { describeError } from '../handler/errors.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Patch } from '../handler/patch.js';

/**
 * Kopf's results delivery: what a change handler returns, other than `undefined` or `null`, is set
 * at `status[<handler id>]` of its patch, so it goes out in the same status write as the handler's
 * own status changes (and, with status storage, as the bookkeeping). The value is stored as JSON
 * (`JSON.stringify` rules: a `Date` becomes its ISO string, `undefined` object fields are left out);
 * it replaces what the handler itself put at that key. Returns why the value cannot be stored (a
 * function, a symbol, a BigInt, a cycle), or undefined when it was stored or there was nothing to store.
 */
export function deliverResult(patch: Patch, handlerId: string, result: unknown): string | undefined {
  if (result === undefined || result === null) return undefined;
  let json: string | undefined;
  try {
    json = JSON.stringify(result);
  } catch (error) {
    return `handler ${handlerId} returned a value that is not JSON (${describeError(error)}); return JSON data, or nothing`;
  }
  if (json === undefined) return `handler ${handlerId} returned a ${typeof result}, which is not JSON; return JSON data, or nothing`;
  (patch.status as Record<string, unknown>)[handlerId] = JSON.parse(json) as unknown;
  return undefined;
}

/**
 * Whether `result` is already what `status[<handler id>]` of `body` holds (as JSON), so delivering it
 * again would change nothing: a timer that returns the same value every tick then writes nothing.
 */
export function isStoredResult(body: KubeObject, handlerId: string, result: unknown): boolean {
  if (result === undefined || result === null) return false;
  const status = (body as { status?: unknown }).status;
  if (typeof status !== 'object' || status === null || !Object.hasOwn(status, handlerId)) return false;
  let json: string | undefined;
  try {
    json = JSON.stringify(result);
  } catch {
    return false;
  }
  return json !== undefined && isDeepStrictEqual(JSON.parse(json) as unknown, (status as Record<string, unknown>)[handlerId]);
}
