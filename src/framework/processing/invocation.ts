import type { ApiClient } from '../api/api-client.js';
import type { Resource } from '../api/resource.js';
import type { Clock } from '../clock/clock.js';
import type { LongTimeout } from '../clock/long-timeout.js';
import { AttemptTimeoutError } from '../clock/time-limit.js';
import { conditionsOf, conditionsPatch, type ConditionChange } from '../intents/conditions.js';
import { asError, describeError, HandlerTimeoutError, PermanentError } from '../intents/errors.js';
import type { ChangeContext, ChangeHandlerSpec } from '../intents/handler-specs.js';
import { objectContext } from '../intents/object-context.js';
import type { ObjectMemos } from '../intents/memo.js';
import { emptyPatch, type Patch } from '../intents/patch.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { ChangeReason } from '../state/progress.js';
import type { Identity } from '../state/identity.js';
import { guardHandlerPatch, type GuardedPatch } from './patch-guard.js';
import type { Selection } from './handler-selection.js';
import { deliverResult } from './results-delivery.js';

/** Everything one call of a change handler needs. */
export interface Invocation {
  handler: ChangeHandlerSpec;
  body: KubeObject;
  reason: ChangeReason;
  /** `old`, `new` and `diff` as the handler sees them. */
  change: Pick<Selection, 'old' | 'new' | 'diff'>;
  /** Its first attempt's time, the attempts before this one, and what is left of its `timeout`; unset: a first, unlimited call. */
  timing?: { startedAt: number; retry: number; remainingMs?: number };
  /** Aborts the call when the operator stops. */
  signal: AbortSignal;
  /** The handler's own logger. */
  logger: Logger;
  resource: Resource;
  client: ApiClient;
  /** Reads the time (`started`, `runtime`). */
  now: () => number;
  /** Times the attempt limit. */
  clock: Clock;
  /** The operator's limit on one attempt (retried when exceeded). */
  attemptTimeoutMs?: number;
  /** Whose bookkeeping the handler's patch must leave alone. Default: the default identity. */
  identity?: Identity;
  /** memo: the operator's per-object memos (`ctx.memo`); unset: a memo of the call's own. */
  memos?: ObjectMemos;
}

/** What a call came to: the handler's patch (checked), and what it threw, if anything. */
export interface InvocationResult {
  patch: Patch;
  error?: Error;
}

/**
 * Calls the handler with its context under the sooner of its remaining `timeout` and the operator's
 * attempt limit, and never throws: any throw, `undefined` included, is a failure in the result. The
 * patch is checked by `guardHandlerPatch`; a refused patch is a `PermanentError`.
 */
export async function invokeHandler(invocation: Invocation): Promise<InvocationResult> {
  const { handler, body, change, timing, signal } = invocation;
  const patch = emptyPatch();
  const controller = new AbortController();
  const onStop = (): void => controller.abort(signal.reason);
  signal.addEventListener('abort', onStop, { once: true });
  let timer: LongTimeout | undefined;
  const startedAt = timing?.startedAt ?? invocation.now();
  const { conditions, changes } = conditionsOf(body.status);
  // Object.assign, not a spread: a spread would read (and so make) the object's memo.
  const context: ChangeContext = Object.assign(
    objectContext(
      body,
      invocation.logger,
      invocation.resource,
      invocation.client,
      invocation.memos,
    ),
    {
      patch,
      conditions,
      reason: invocation.reason,
      old: change.old,
      new: change.new,
      diff: change.diff,
      retry: timing?.retry ?? 0,
      started: new Date(startedAt),
      runtime: invocation.now() - startedAt,
      signal: controller.signal,
    },
  );
  try {
    const run = Promise.resolve().then(() => handler.fn(context));
    const limit = attemptLimit(handler, timing?.remainingMs, invocation.attemptTimeoutMs);
    let returned: unknown;
    if (limit !== undefined) {
      const timedOut = new Promise<never>((_, reject) => {
        timer = invocation.clock.setTimeout(() => {
          controller.abort(limit.error());
          reject(controller.signal.reason);
        }, limit.ms);
      });
      returned = await Promise.race([run, timedOut]);
    } else {
      returned = await run;
    }
    addConditions(patch, body, changes, invocation);
    // Results delivery: the return value goes into this patch's status, under the handler's id.
    const undeliverable = deliverResult(patch, handler.id, returned);
    if (undeliverable !== undefined)
      return {
        patch: guardedCopy(patch, body, invocation.identity).patch ?? emptyPatch(),
        error: new PermanentError(undeliverable),
      };
    const guarded = guardedCopy(patch, body, invocation.identity);
    if (guarded.problem !== undefined)
      return { patch: emptyPatch(), error: new PermanentError(guarded.problem) };
    return { patch: guarded.patch };
  } catch (error) {
    // A failed attempt's patch is still sent (status it set, say): it goes through the same guard.
    addConditions(patch, body, changes, invocation);
    const guarded = guardedCopy(patch, body, invocation.identity);
    return { patch: guarded.patch ?? emptyPatch(), error: asError(error) };
  } finally {
    timer?.clear();
    signal.removeEventListener('abort', onStop);
  }
}

/** The conditions the handler set, into its status patch (with the generation they saw, given a status subresource). */
function addConditions(
  patch: Patch,
  body: KubeObject,
  changes: readonly ConditionChange[],
  invocation: Invocation,
): void {
  const extra = conditionsPatch(
    body.status,
    changes,
    body.metadata?.generation,
    new Date(invocation.now()),
    invocation.resource.hasStatus,
  );
  if (extra) Object.assign(patch.status, extra);
}

/**
 * The handler's patch as it is now, copied (an abandoned attempt may still be changing the object it
 * was given) and checked by `guardHandlerPatch`.
 */
function guardedCopy(patch: Patch, body: KubeObject, identity: Identity | undefined): GuardedPatch {
  let copy: Patch;
  try {
    copy = structuredClone(patch);
  } catch (error) {
    return { problem: `the handler's patch cannot be sent: ${describeError(error)}` };
  }
  return guardHandlerPatch(copy, body, identity);
}

/** The sooner of the handler's remaining `timeout` (permanent) and the operator's attempt limit (retried). */
function attemptLimit(
  handler: ChangeHandlerSpec,
  remainingMs: number | undefined,
  attemptTimeoutMs: number | undefined,
): { ms: number; error: () => Error } | undefined {
  const own = remainingMs === undefined ? undefined : Math.max(0, remainingMs);
  if (attemptTimeoutMs !== undefined && (own === undefined || attemptTimeoutMs < own)) {
    return { ms: attemptTimeoutMs, error: () => new AttemptTimeoutError(attemptTimeoutMs) };
  }
  if (own !== undefined)
    return {
      ms: own,
      error: () => new HandlerTimeoutError(`timed out after ${handler.options.timeout} s`),
    };
  return undefined;
}
