import { inSpan } from '../observability/tracing.js';
import { ApiError } from '../api/api-error.js';
import type { ObjectApi } from '../api/object-api.js';
import { Duration } from 'luxon';
import { toMilliseconds } from '../clock/duration.js';
import { withTimeLimit } from '../clock/time-limit.js';
import { conditionsOf, conditionsPatch, type ConditionChange } from '../intents/conditions.js';
import { asError, describeError, PermanentError } from '../intents/errors.js';
import { matchesObject } from '../intents/filters.js';
import type { ObjectMemos } from '../intents/memo.js';
import { objectContext } from '../intents/object-context.js';
import { applyMergePatch, emptyPatch, mergeInto, prune, type Patch } from '../intents/patch.js';
import type { ReconcileResult, ReconcileSpec } from '../intents/reconcile-specs.js';
import { retryDelayMs } from '../intents/retry-delay.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { ProcessResult } from '../reactor/reactor.js';
import { diff } from '../state/diff.js';
import { Identity } from '../state/identity.js';
import type { ChangeBatch } from './change-processor-options.js';
import { ReleaseDeferred } from './finalizer-step.js';
import type { OwnWrite } from './object-memory.js';
import { guardHandlerPatch } from './patch-guard.js';
import { writePatch, WriteSuperseded } from './patch-writer.js';
import { freshest } from './read-your-writes.js';

export interface ReconcileProcessorOptions {
  /** The reconciled resource's API: the handler's patch is written through it. */
  api: ObjectApi;
  handler: ReconcileSpec;
  logger: Logger;
  metrics?: Metrics;
  /** The operator's handler timeout: past it a run's signal aborts and it counts as failed. */
  attemptTimeoutMs?: number;
  /** Whose bookkeeping the handler's patch must leave alone. */
  identity?: Identity;
  memos?: ObjectMemos;
  /** Default `Date.now`. */
  now?: () => number;
}

/** What is pending for one object; kept only while something is. */
interface ReconcileState {
  /** A child or watched object woke it, or a change waits for `minInterval`. */
  due: boolean;
  /** Failed runs in a row. */
  failures: number;
  /** When a failed run is retried. */
  retryAt?: number;
  /** When a successful run asked to run again, and how urgently. */
  requeueAt?: number;
  priority?: 'high' | 'normal' | 'low';
  /** resourceVersions of our own writes that changed nothing but what the run wrote: their events wake nothing. */
  echoes?: Set<string>;
  /** Our last write, until the watch delivers it (read-your-writes). */
  ownWrite?: OwnWrite;
}

/** How one run ended. */
type Outcome =
  | { ok: true; requeueAfterMs?: number; priority?: 'high' | 'normal' | 'low' }
  | { ok: false; retryInMs?: number };

/**
 * Runs the `@on.reconcile` handler of one resource: level-triggered, with the object's newest state,
 * whenever it changed (other than by the run's own write), a child or watched object woke it, or the
 * run asked to run again. The reactor serializes runs per object and coalesces what arrives during
 * one into the next; runs of one object start at least `minInterval` apart. A failed run is retried
 * after a TemporaryError's delay, or 1 s doubling to 60 s; a PermanentError waits for the next change.
 * Objects being deleted get their one last run from the finalizer step ({@link finalize}).
 */
export class ReconcileProcessor {
  private readonly states = new Map<string, ReconcileState>();
  /** When each object's last run started, oldest first (re-inserted on every start), pruned from the front. */
  private readonly starts = new Map<string, number>();
  private readonly metrics: Metrics;
  private readonly identity: Identity;
  private readonly now: () => number;

  constructor(private readonly options: ReconcileProcessorOptions) {
    this.metrics = options.metrics ?? noMetrics;
    this.identity = options.identity ?? Identity.DEFAULT;
    this.now = options.now ?? Date.now;
  }

  get handler(): ReconcileSpec {
    return this.options.handler;
  }

  /** Marks an object due (a child or watched object changed); the caller then wakes it in the reactor. */
  wake(uid: string): void {
    this.state(uid).due = true;
  }

  /** Whether the object is held with the finalizer for its last run. */
  applies(body: KubeObject): boolean {
    return this.options.handler.options.finalizer !== false && this.matches(body);
  }

  /** Drops what it keeps about an object: deleted, or gone to another replica (sharding). */
  forget(uid: string): void {
    this.states.delete(uid);
    this.starts.delete(uid);
  }

  /** One reactor run of the object: reconciles it when due; asks the reactor for the next time it is. */
  async process(batch: ChangeBatch): Promise<ProcessResult> {
    const { uid, latest } = batch;
    if (latest.type === 'DELETED') return this.forget(uid);
    const now = this.now();
    this.pruneStarts(now);
    const existing = this.states.get(uid);
    const changed = batch.events
      .map((event) => !this.isEcho(existing, event.object))
      .includes(true);
    const reached = (at: number | undefined): boolean => at !== undefined && at <= now;
    if (!changed && !existing?.due && !reached(existing?.retryAt) && !reached(existing?.requeueAt))
      return this.settle(uid, now);
    const last = this.starts.get(uid);
    if (last !== undefined && now - last < this.options.handler.minIntervalMs) {
      this.state(uid).due = true;
      return { requeueAfterMs: last + this.options.handler.minIntervalMs - now };
    }
    const state = this.state(uid);
    const fresh = freshest(state.ownWrite, batch.events, latest.object, now);
    if (fresh.caughtUp) state.ownWrite = undefined;
    const body = fresh.body;
    state.due = false;
    state.echoes = undefined;
    state.retryAt = undefined;
    state.requeueAt = undefined;
    // A deletion gets its last run from the finalizer step; without the finalizer, none.
    if (body.metadata?.deletionTimestamp || !this.matches(body) || batch.signal.aborted)
      return this.settle(uid, now);
    this.starts.delete(uid);
    this.starts.set(uid, now);
    const outcome = await this.run(body, state, false, batch.signal);
    const after = this.now();
    if (outcome.ok) {
      state.failures = 0;
      if (outcome.requeueAfterMs !== undefined) state.requeueAt = after + outcome.requeueAfterMs;
      state.priority = outcome.priority;
    } else if (outcome.retryInMs !== undefined) {
      state.retryAt = after + outcome.retryInMs;
    }
    return this.settle(uid, after);
  }

  /**
   * The last run of an object being deleted, from the finalizer step before the finalizer comes off.
   * A failure other than a PermanentError keeps the finalizer: it throws {@link ReleaseDeferred}, and
   * the finalizer step runs it again after the delay.
   */
  async finalize(body: KubeObject, signal: AbortSignal): Promise<void> {
    if (!this.applies(body)) return;
    const uid = body.metadata?.uid ?? '';
    const state = this.state(uid);
    const outcome = await this.run(body, state, true, signal);
    if (!outcome.ok && outcome.retryInMs !== undefined)
      throw new ReleaseDeferred(outcome.retryInMs);
    this.states.delete(uid);
  }

  private matches(body: KubeObject): boolean {
    return matchesObject(body, this.options.handler.options, {
      resource: this.options.api.resource,
      memos: this.options.memos,
    });
  }

  private state(uid: string): ReconcileState {
    let state = this.states.get(uid);
    if (!state) this.states.set(uid, (state = { due: false, failures: 0 }));
    return state;
  }

  /** An event of our own write that changed nothing else: seen once, then forgotten. */
  private isEcho(state: ReconcileState | undefined, object: KubeObject): boolean {
    const version = object.metadata?.resourceVersion;
    return version !== undefined && state?.echoes?.delete(version) === true;
  }

  /** Forgets an object with nothing pending; otherwise, when to run it next. */
  private settle(uid: string, now: number): ProcessResult {
    const state = this.states.get(uid);
    if (!state) return undefined;
    const times = [state.retryAt, state.requeueAt].filter((at): at is number => at !== undefined);
    if (
      !state.due &&
      times.length === 0 &&
      state.failures === 0 &&
      !state.ownWrite &&
      !state.echoes?.size
    )
      this.states.delete(uid);
    if (state.due) return { requeueAfterMs: 0 };
    if (times.length === 0) return undefined;
    const requeueAfterMs = Math.max(0, Math.min(...times) - now);
    const retry = state.failures > 0 ? { retry: true } : {};
    return state.priority === undefined ||
      state.priority === 'normal' ||
      state.requeueAt === undefined
      ? { requeueAfterMs, ...retry }
      : { requeueAfterMs, priority: state.priority, ...retry };
  }

  private pruneStarts(now: number): void {
    for (const [uid, at] of this.starts) {
      if (now - at < this.options.handler.minIntervalMs) break;
      this.starts.delete(uid);
    }
  }

  /** Calls the handler once and writes what it set; never throws. */
  private async run(
    body: KubeObject,
    state: ReconcileState,
    deleting: boolean,
    signal: AbortSignal,
  ): Promise<Outcome> {
    const { handler, api } = this.options;
    const meta = body.metadata ?? {};
    const where = `${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}`;
    const logger = this.options.logger.child({
      namespace: meta.namespace,
      name: meta.name,
      handler: handler.id,
    });
    const { conditions, changes } = conditionsOf(body.status);
    const patch = emptyPatch();
    const began = performance.now();
    let result: ReconcileResult;
    let failure: Error | undefined;
    try {
      // Object.assign, not a spread: a spread would read (and so make) the object's memo.
      const context = Object.assign(
        objectContext(body, logger, api.resource, api.client, this.options.memos),
        { patch, conditions, deleting, retry: state.failures },
      );
      const attributes = {
        'konductor.handler.id': handler.id,
        'konductor.handler.retry': state.failures,
        'konductor.reconcile.deleting': deleting,
      };
      result = await inSpan(`reconcile ${handler.id}`, { attributes }, () =>
        withTimeLimit(
          (attemptSignal) => handler.fn(Object.assign(context, { signal: attemptSignal })),
          this.options.attemptTimeoutMs,
          signal,
        ),
      );
    } catch (thrown) {
      failure = asError(thrown);
    }
    this.metrics.observe?.('handler_duration_seconds', (performance.now() - began) / 1000, {
      handler: handler.id,
    });
    this.metrics.increment('handler_runs_total', {
      handler: handler.id,
      result: failure ? 'failure' : 'success',
    });
    if (failure) return this.failed(state, failure, logger, where);
    let requeueAfterMs = handler.requeueAfterMs;
    let priority: 'high' | 'normal' | 'low' | undefined;
    try {
      ({ requeueAfterMs, priority } = requeueOf(result, requeueAfterMs, handler.id));
      await this.write(body, this.patchOf(body, patch, changes, deleting), state, signal);
    } catch (error) {
      return this.failed(state, asError(error), logger, where);
    }
    return { ok: true, requeueAfterMs, priority };
  }

  private failed(state: ReconcileState, error: Error, logger: Logger, where: string): Outcome {
    state.failures += 1;
    if (error instanceof PermanentError) {
      logger.error(
        { err: error },
        `reconcile ${this.options.handler.id} of ${where} failed permanently (not retried until it changes): ${describeError(error)}`,
      );
      return { ok: false };
    }
    const retryInMs = retryDelayMs(error, state.failures);
    logger.error(
      { err: error, retryInMs },
      `reconcile ${this.options.handler.id} of ${where} failed (its patch is not sent; retrying in ${Math.round(retryInMs / 100) / 10} s): ${describeError(error)}`,
    );
    return { ok: false, retryInMs };
  }

  /** The handler's checked patch, with the conditions it set and the generation it saw, as one merge patch. */
  private patchOf(
    body: KubeObject,
    patch: Patch,
    changes: readonly ConditionChange[],
    deleting: boolean,
  ): Record<string, unknown> {
    const guarded = guardHandlerPatch(structuredClone(patch), body, this.identity);
    if (guarded.problem !== undefined) throw new PermanentError(guarded.problem);
    const merged: Record<string, unknown> = {};
    mergeInto(merged, guarded.patch as Record<string, unknown>);
    const status = (body.status ?? {}) as Record<string, unknown>;
    const generation = body.metadata?.generation;
    const extra: Record<string, unknown> =
      conditionsPatch(status, changes, generation, new Date(this.now()), false) ?? {};
    // Without a status subresource a status write bumps the generation: recording it would chase itself.
    const observed =
      !deleting &&
      this.options.handler.options.observedGeneration !== false &&
      this.options.api.resource.hasStatus;
    if (observed && generation !== undefined && status.observedGeneration !== generation)
      extra.observedGeneration = generation;
    if (Object.keys(extra).length > 0) mergeInto(merged, { status: extra });
    // Without the empty parts a patch starts with, so that an unchanged object compares equal.
    return prune(merged) ?? {};
  }

  /** Sends the patch unless it would change nothing. Events of what it wrote are echoes. */
  private async write(
    body: KubeObject,
    patch: Record<string, unknown>,
    state: ReconcileState,
    signal: AbortSignal,
  ): Promise<void> {
    const expected = applyMergePatch(structuredClone(body), patch);
    if (sameObject(body, expected)) return;
    const statusOnly = applyMergePatch(structuredClone(body), { status: patch.status ?? {} });
    const onWrite = (written: KubeObject): void => {
      const version = written.metadata?.resourceVersion;
      if (!version || !written.metadata?.uid) return;
      state.ownWrite = { resourceVersion: version, body: written, at: this.now() };
      if (sameObject(written, expected) || sameObject(written, statusOnly))
        (state.echoes ??= new Set()).add(version);
    };
    await writePatch(this.options.api, body, patch, { onWrite, signal }).catch((error: unknown) => {
      // Gone meanwhile (its DELETED event follows), or handled by its new owner now.
      if (!ApiError.isNotFound(error) && !(error instanceof WriteSuperseded)) throw error;
    });
  }
}

/** The re-run a handler asked for: its returned delay and priority, else `requeueAfter`; throws naming a malformed one. */
function requeueOf(
  result: ReconcileResult,
  configuredMs: number | undefined,
  id: string,
): { requeueAfterMs?: number; priority?: 'high' | 'normal' | 'low' } {
  try {
    return readRequeue(result, configuredMs, id);
  } catch (error) {
    // A malformed delay is the handler's code: running it again would return the same.
    throw error instanceof PermanentError ? error : new PermanentError(describeError(error));
  }
}

function readRequeue(
  result: ReconcileResult,
  configuredMs: number | undefined,
  id: string,
): { requeueAfterMs?: number; priority?: 'high' | 'normal' | 'low' } {
  if (result === undefined || result === null) return { requeueAfterMs: configuredMs };
  if (typeof result === 'object' && !Duration.isDuration(result)) {
    const { requeueAfter, priority } = result;
    if (
      priority !== undefined &&
      priority !== 'high' &&
      priority !== 'normal' &&
      priority !== 'low'
    ) {
      throw new PermanentError(
        `${id} returned priority ${JSON.stringify(priority)}: use 'high', 'normal' or 'low'`,
      );
    }
    return {
      requeueAfterMs:
        requeueAfter === undefined
          ? configuredMs
          : toMilliseconds(requeueAfter, `the delay ${id} returned`),
      priority,
    };
  }
  return { requeueAfterMs: toMilliseconds(result, `the delay ${id} returned`) };
}

/** Whether two states of an object agree on everything but server-kept metadata. */
function sameObject(a: KubeObject, b: KubeObject): boolean {
  const parts = (o: KubeObject): unknown => {
    const {
      resourceVersion: _v,
      managedFields: _m,
      generation: _g,
      ...metadata
    } = o.metadata ?? {};
    return { ...o, metadata };
  };
  return diff(parts(a), parts(b)).length === 0;
}
