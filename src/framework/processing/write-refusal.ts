/**
 * Writes the API server refuses as invalid: a handler's patch that breaks the resource's schema,
 * annotations past the 256 KiB limit. Retrying the same bytes cannot help, so: one Warning Event, a
 * few backed-off attempts for a 422 (in case it came from something transient, such as a webhook),
 * none for a 400, then the object waits for its next change (or a restart) instead of looping. Pure.
 */
import { ApiError } from '../api/api-error.js';
import { exponentialDelayMs } from '../clock/backoff.js';
import type { KubeObject } from '../objects/kube-object.js';
import { capMessage } from '../state/progress.js';
import type { ObjectMemory } from './object-memory.js';
import type { Warning } from './warnings.js';

/** Attempts at a write the API server refuses as invalid (422) before the change waits for the object to change. */
export const MAX_INVALID_WRITE_ATTEMPTS = 5;

type Refused = NonNullable<ObjectMemory['refused']>;

/** Whether the API server refused a write as invalid (400, 422). */
export function isRefusal(error: unknown): error is ApiError {
  return error instanceof ApiError && (error.status === 400 || error.status === 422);
}

/** Whether the object, still in `state`, waits for a change: its writes for that state were refused for good. */
export function waitsForChange(refused: Refused | undefined, state: string): boolean {
  return refused?.state === state && refused.attempts >= MAX_INVALID_WRITE_ATTEMPTS;
}

/** After a refusal in `state`: what to remember, and when to try again (never, when unset). */
export function afterRefusal(
  previous: Refused | undefined,
  state: string,
  status: number,
): { refused: Refused; requeueAfterMs?: number } {
  const attempts = (previous?.state === state ? previous.attempts : 0) + 1;
  const final = status === 400 || attempts >= MAX_INVALID_WRITE_ATTEMPTS;
  if (final) return { refused: { state, attempts: MAX_INVALID_WRITE_ATTEMPTS } };
  return {
    refused: { state, attempts },
    requeueAfterMs: exponentialDelayMs(attempts, 1_000, 60_000),
  };
}

/** The one Warning a refused write in `state` gives. */
export function refusalWarning(body: KubeObject, state: string, error: ApiError): Warning {
  const meta = body.metadata ?? {};
  const object = `${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}`;
  return {
    subject: `refused\u0000${state}`,
    reason: 'WriteRefused',
    message:
      `the API server refused the framework's write for ${object} (${error.status}): ${capMessage(error.message)}; ` +
      "fix what the message names (a handler's patch, or annotations over 256 KiB); the object is handled again when it changes",
  };
}
