import type { ApiClient } from '../api/api-client.js';
import type { Resource } from '../api/resource.js';
import type { Clock } from '../clock/clock.js';
import { describeError } from '../intents/errors.js';
import type { ObjectMemos } from '../intents/memo.js';
import { emptyPatch } from '../intents/patch.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import type { Identity } from '../state/identity.js';
import { capMessage, type ProgressRecord } from '../state/progress.js';
import type { Selection } from './handler-selection.js';
import { invokeHandler } from './invocation.js';
import { inSpan, markFailed } from '../observability/tracing.js';
import type { HandlerResult } from './object-memory.js';
import {
  attemptStart,
  failureMessage,
  nextRecord,
  remainingMs,
  verdictAfterAttempt,
  verdictBeforeAttempt,
  type Change,
  type Verdict,
} from './progression.js';

/** What running handlers needs from the processor, the same for every attempt. */
export interface ExecutionEnvironment {
  resource: Resource;
  client: ApiClient;
  poster: EventPoster;
  metrics: Metrics;
  /** Reads the time for progress records. */
  now: () => number;
  /** Times the attempt limit. */
  clock: Clock;
  /** The operator's limit on one attempt (retried when exceeded). */
  attemptTimeoutMs?: number;
  /** The operator's identity: its bookkeeping is off limits to handlers' patches, and its finalizer named in failures. */
  identity: Identity;
  /** memo: the operator's per-object memos (`ctx.memo`). */
  memos?: ObjectMemos;
}

/** One attempt of one selected handler. */
export interface Attempt {
  selection: Selection;
  /** Its record for this change, if any. */
  record: ProgressRecord | undefined;
  body: KubeObject;
  change: Change;
  /** The handler's own logger. */
  logger: Logger;
  signal: AbortSignal;
}

/**
 * Makes one attempt of a handler (Kopf's `execution.py`): checks its retry limit and timeout, invokes
 * it, and turns what it came to into its next progress record and patch; on the way it logs, posts
 * HandlerRetrying / HandlerFailed Warnings, and counts the run and its duration.
 */
export async function executeAttempt(
  environment: ExecutionEnvironment,
  attempt: Attempt,
): Promise<HandlerResult> {
  const { selection, body, change, logger } = attempt;
  const { handler } = selection;
  const now = environment.now();
  const start = attemptStart(attempt.record, change, now);
  const refusal = verdictBeforeAttempt(handler, start, now);
  if (refusal)
    return {
      record: report(environment, attempt, refusal, start.base, start.retries, now),
      patch: emptyPatch(),
    };

  const attributes = {
    'konductor.handler.id': handler.id,
    'konductor.handler.retry': start.retries,
    'konductor.change.reason': change.reason,
  };
  // The handler runs in this span: its ctx.client requests become the span's children.
  return inSpan(`handler ${handler.id}`, { attributes }, async (span) => {
    const began = performance.now();
    const result = await invokeHandler({
      handler,
      body,
      reason: change.reason,
      change: selection,
      timing: {
        startedAt: start.startedAt,
        retry: start.retries,
        remainingMs: remainingMs(handler, start, now),
      },
      signal: attempt.signal,
      logger,
      resource: environment.resource,
      client: environment.client,
      now: environment.now,
      clock: environment.clock,
      attemptTimeoutMs: environment.attemptTimeoutMs,
      identity: environment.identity,
      memos: environment.memos,
    });
    environment.metrics.observe?.('handler_duration_seconds', (performance.now() - began) / 1000, {
      handler: handler.id,
    });
    const attempts = start.retries + 1;
    if (result.error !== undefined) {
      // The stack says where a handler failed; at debug level, as the one-line message is logged below anyway.
      logger.debug(
        { err: describeError(result.error), stack: result.error.stack },
        `handler ${handler.id} threw`,
      );
    }
    const after = environment.now();
    const verdict = verdictAfterAttempt(handler, result.error, attempts, start.startedAt, after);
    const record = report(environment, attempt, verdict, start.base, attempts, after);
    environment.metrics.increment('handler_runs_total', {
      handler: handler.id,
      result: record.success ? 'success' : record.failure ? 'failure' : 'retry',
    });
    span?.setAttribute('konductor.handler.outcome', verdict.verdict);
    if (verdict.verdict === 'temporary')
      span?.setAttribute('konductor.handler.retry_in_s', verdict.delaySeconds);
    if ((verdict.verdict === 'temporary' || verdict.verdict === 'permanent') && span)
      markFailed(span, verdict.error);
    return { record, patch: result.patch };
  });
}

/** Logs the verdict (and posts its Warning, if any), and returns the handler's next record. */
function report(
  environment: ExecutionEnvironment,
  attempt: Attempt,
  verdict: Verdict,
  base: ProgressRecord,
  attempts: number,
  now: number,
): ProgressRecord {
  const { logger, body, change } = attempt;
  const { handler } = attempt.selection;
  switch (verdict.verdict) {
    case 'success':
      logger.info(`handler ${handler.id} succeeded`);
      return nextRecord(verdict, { base, attempts, now });
    case 'ignored':
      logger.warn(
        { err: describeError(verdict.error) },
        `handler ${handler.id} failed; ignored as configured`,
      );
      return nextRecord(verdict, { base, attempts, now });
    case 'temporary': {
      const { delaySeconds } = verdict;
      const message = capMessage(describeError(verdict.error));
      logger.warn(
        { err: message, retries: attempts, delaySeconds },
        `handler ${handler.id} failed; retrying in ${delaySeconds} s`,
      );
      environment.poster.post(
        body,
        'Warning',
        'HandlerRetrying',
        `${handler.id} failed (attempt ${attempts}), retrying in ${delaySeconds} s: ${message}`,
      );
      return nextRecord(verdict, { base, attempts, now });
    }
    case 'permanent': {
      const message = failureMessage(
        handler,
        change.reason,
        body,
        verdict.error,
        environment.identity,
      );
      logger.error(
        { err: message, retries: attempts },
        `handler ${handler.id} failed permanently: ${message}`,
      );
      environment.poster.post(
        body,
        'Warning',
        'HandlerFailed',
        `${handler.id} failed permanently: ${message}`,
      );
      return nextRecord(verdict, { base, attempts, now, finalMessage: message });
    }
  }
}
