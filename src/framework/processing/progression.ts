/**
 * Handler progression (Kopf's `progression.py`): from a handler's stored progress record and what its
 * attempt came to, its next record. Pure: no I/O, no clock (times come in as `now`), no logging.
 */
import { exponentialDelayMs } from '../clock/backoff.js';
import {
  describeError,
  HandlerRetriesError,
  HandlerTimeoutError,
  PermanentError,
  TemporaryError,
} from '../intents/errors.js';
import type { ChangeHandlerSpec } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import { Identity } from '../state/identity.js';
import {
  capMessage,
  delayRemainingMs,
  isFinished,
  type ChangeReason,
  type ProgressRecord,
} from '../state/progress.js';
import type { HandlerResult } from './object-memory.js';

/** The change handlers run for: the cause's reason and the tag of the diff-base it is against. */
export interface Change {
  reason: ChangeReason;
  tag: string;
  /** First seen by this process through a listing (the operator (re)started). */
  resuming: boolean;
}

/** Whether this handler's final failure keeps the object: a non-optional delete handler, handling a deletion. */
export function blocksDeletion(handler: ChangeHandlerSpec, reason: ChangeReason): boolean {
  return reason === 'delete' && handler.kind === 'delete' && !handler.options.optional;
}

/**
 * The stored record that counts for this change: one for the same cause and the same diff-base only.
 * A delete handler that failed for good holds the object; a new process (perhaps with a fix) tries it
 * once more, so for a resuming object its failure does not count.
 */
export function recordForChange(
  handler: ChangeHandlerSpec,
  stored: ProgressRecord | undefined,
  change: Change,
): ProgressRecord | undefined {
  const record =
    stored?.purpose === change.reason && stored.base === change.tag ? stored : undefined;
  if (record?.failure && change.resuming && blocksDeletion(handler, change.reason))
    return undefined;
  return record;
}

/** What to do with one selected handler in this run. */
export type HandlerStep =
  /** Finished with this change (success or final failure): its record stays as it is. */
  | { step: 'finished'; record: ProgressRecord }
  /** Finished in an earlier run whose write failed: that result is written, the handler not run again. */
  | { step: 'unwritten'; result: HandlerResult }
  /** Its next attempt is not due yet. */
  | { step: 'delayed'; record: ProgressRecord; delayMs: number }
  /** Due: run it now. */
  | { step: 'run'; record: ProgressRecord | undefined };

export function handlerStep(
  record: ProgressRecord | undefined,
  unwritten: HandlerResult | undefined,
  now: number,
): HandlerStep {
  if (isFinished(record)) return { step: 'finished', record: record! };
  if (unwritten) return { step: 'unwritten', result: unwritten };
  const delayMs = delayRemainingMs(record, now);
  if (delayMs > 0) return { step: 'delayed', record: record!, delayMs };
  return { step: 'run', record };
}

/** Where an attempt starts from: its first attempt's time, the attempts so far, and the record's fixed fields. */
export interface AttemptStart {
  startedAt: number;
  retries: number;
  base: ProgressRecord;
}

export function attemptStart(
  record: ProgressRecord | undefined,
  change: Change,
  now: number,
): AttemptStart {
  // A start in the future (a forged or skewed record) would stretch the handler's timeout: clamp it.
  const startedAt = record?.started ? Math.min(Date.parse(record.started), now) : now;
  return {
    startedAt,
    retries: record?.retries ?? 0,
    base: { started: new Date(startedAt).toISOString(), purpose: change.reason, base: change.tag },
  };
}

/** What one attempt of a handler came to. */
export type Verdict =
  | { verdict: 'success' }
  /** It failed, and its `errors: 'ignored'` makes that a success. */
  | { verdict: 'ignored'; error: Error }
  /** It failed and is retried after `delaySeconds`. */
  | { verdict: 'temporary'; error: Error; delaySeconds: number }
  /** It failed for good with `error` (its own, or the retry limit or timeout it ran into). */
  | { verdict: 'permanent'; error: Error };

/** Before an attempt: the handler already used up its `retries` or its `timeout` (no attempt is made then). */
export function verdictBeforeAttempt(
  handler: ChangeHandlerSpec,
  start: AttemptStart,
  now: number,
): Verdict | undefined {
  const { retries: maxRetries, timeout } = handler.options;
  if (maxRetries !== undefined && start.retries >= maxRetries) {
    return {
      verdict: 'permanent',
      error: new HandlerRetriesError(`gave up after ${start.retries} attempts`),
    };
  }
  if (timeout !== undefined && now - start.startedAt >= timeout * 1000) {
    return { verdict: 'permanent', error: new HandlerTimeoutError(`timed out after ${timeout} s`) };
  }
  return undefined;
}

/** Milliseconds left of the handler's `timeout` for this attempt (undefined: no timeout). */
export function remainingMs(
  handler: ChangeHandlerSpec,
  start: AttemptStart,
  now: number,
): number | undefined {
  const { timeout } = handler.options;
  return timeout !== undefined ? timeout * 1000 - (now - start.startedAt) : undefined;
}

/**
 * After an attempt that threw `error` (or nothing), made as attempt number `attempts`: a
 * `PermanentError` is final; other errors follow the handler's `errors` mode; a retry waits the
 * `TemporaryError`'s delay, else the handler's `backoff`, else 1 s doubling up to 60 s; a retry past the
 * handler's `retries` or `timeout` is a final failure instead.
 */
export function verdictAfterAttempt(
  handler: ChangeHandlerSpec,
  error: Error | undefined,
  attempts: number,
  startedAt: number,
  now: number,
): Verdict {
  if (error === undefined) return { verdict: 'success' };
  const { retries: maxRetries, timeout } = handler.options;
  const mode = handler.options.errors ?? 'temporary';
  if (error instanceof PermanentError) return { verdict: 'permanent', error };
  if (!(error instanceof TemporaryError)) {
    if (mode === 'permanent') return { verdict: 'permanent', error };
    if (mode === 'ignored') return { verdict: 'ignored', error };
  }
  const delaySeconds =
    error instanceof TemporaryError
      ? error.delay
      : (handler.options.backoff ?? exponentialDelayMs(attempts, 1_000, 60_000) / 1000);
  if (maxRetries !== undefined && attempts >= maxRetries) {
    return {
      verdict: 'permanent',
      error: new HandlerRetriesError(
        `${describeError(error)} (gave up after ${attempts} attempts)`,
      ),
    };
  }
  if (timeout !== undefined && now + delaySeconds * 1000 - startedAt >= timeout * 1000) {
    return {
      verdict: 'permanent',
      error: new HandlerTimeoutError(
        `${describeError(error)} (would exceed its ${timeout} s timeout)`,
      ),
    };
  }
  return { verdict: 'temporary', error, delaySeconds };
}

/**
 * The message a final failure records: for a delete handler that keeps the object, also what that
 * means for the object and how it can go.
 */
export function failureMessage(
  handler: ChangeHandlerSpec,
  reason: ChangeReason,
  body: KubeObject,
  error: Error,
  identity: Identity = Identity.DEFAULT,
): string {
  return capMessage(
    blocksDeletion(handler, reason)
      ? `${describeError(error)}; ${deletionBlockedNotice(body, identity)}`
      : describeError(error),
  );
}

/** What a user must know when a delete handler failed for good: the object stays, and how it can go. */
function deletionBlockedNotice(body: KubeObject, identity: Identity): string {
  const meta = body.metadata ?? {};
  const object = `${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}`;
  return (
    `${object} keeps the finalizer ${identity.finalizer} and stays until the handler's problem is fixed ` +
    `(the operator, restarted with a fix, runs the handler again) or the finalizer is removed by hand`
  );
}

/** What a handler's next record is made of, besides its verdict. */
export interface RecordInput {
  base: ProgressRecord;
  /** Attempts made so far, this one included. */
  attempts: number;
  now: number;
  /** A final failure's message (see {@link failureMessage}); by default the error's own, capped. */
  finalMessage?: string;
}

/** The handler's next record after `verdict`. */
export function nextRecord(verdict: Verdict, input: RecordInput): ProgressRecord {
  const { base, attempts, now } = input;
  switch (verdict.verdict) {
    case 'success':
    case 'ignored':
      return { ...base, stopped: new Date(now).toISOString(), success: true, retries: attempts };
    case 'permanent':
      return {
        ...base,
        stopped: new Date(now).toISOString(),
        failure: true,
        retries: attempts,
        message: input.finalMessage ?? capMessage(describeError(verdict.error)),
      };
    case 'temporary':
      return {
        ...base,
        delayed: new Date(now + verdict.delaySeconds * 1000).toISOString(),
        retries: attempts,
        message: capMessage(describeError(verdict.error)),
      };
  }
}

/**
 * Where the selected handlers stand: `done` when every one is finished; `blocked` when done and a
 * delete handler that keeps the object failed for good (only success lets our finalizer go).
 */
export function completion(
  handlers: readonly ChangeHandlerSpec[],
  records: ReadonlyMap<string, ProgressRecord>,
  reason: ChangeReason,
): { done: boolean; blocked: boolean } {
  const done = [...records.values()].every(isFinished);
  const blocked =
    done &&
    handlers.some(
      (handler) => blocksDeletion(handler, reason) && records.get(handler.id)?.failure === true,
    );
  return { done, blocked };
}
