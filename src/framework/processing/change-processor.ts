import { ApiError, retryDelayMs } from '../api/api-error.js';
import { exponentialDelayMs } from '../clock/backoff.js';
import { systemClock } from '../clock/clock.js';
import { describeError } from '../intents/errors.js';
import { matchesObject } from '../intents/filters.js';
import type { ChangeHandlerSpec } from '../intents/handler-specs.js';
import { type FieldPath } from '../objects/field-path.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { ProcessResult } from '../reactor/reactor.js';
import { essenceOf } from '../state/essence.js';
import { hasFinalizer } from '../state/finalizers.js';
import { Identity } from '../state/identity.js';
import { droppedBookkeeping } from './dropped-bookkeeping.js';
import { StoredBookkeeping } from './stored-bookkeeping.js';
import { changeTag, isRetrying } from '../state/progress.js';
import { shareStrings } from '../watching/compact-object.js';
import { detectCause } from './causes.js';
import { changePatch } from './change-patch.js';
import type { ExecutionEnvironment } from './execution.js';
import {
  FinalizerConflict,
  finalizerStep,
  patchFinalizer,
  ReleaseDeferred,
} from './finalizer-step.js';
import { runHandlers } from './handler-run.js';
import { isRelevant, selectHandlers } from './handler-selection.js';
import { invokeHandler } from './invocation.js';
import { ObjectMemories, type HandlerResult, type ObjectMemory } from './object-memory.js';
import { writePatch, WriteSuperseded } from './patch-writer.js';
import { completion, type Change } from './progression.js';
import { freshest } from './read-your-writes.js';
import { warnOnce } from './warnings.js';
import { afterRefusal, isRefusal, refusalWarning, waitsForChange } from './write-refusal.js';

import {
  executionOf,
  extraFieldsOf,
  type ChangeBatch,
  type ChangeProcessorOptions,
  type ObjectRun,
  type RunToWrite,
} from './change-processor-options.js';

/** Re-reads and retries after a conflicting write before the run backs off like any other failure. */
const MAX_CONFLICT_RETRIES = 5;
/** The longest backoff after framework-level failures (write errors). */
const MAX_ERROR_DELAY_MS = 60_000;

/**
 * Runs change handlers (create, update, field, delete, resume) for one resource with Kopf's semantics,
 * keeping progress in annotations so retries survive restarts, and writing as little as possible:
 * handlers' patches, progress and the diff-base go out as one merge PATCH (status as one PATCH on its
 * subresource), the finalizer as a test-guarded JSON patch. Objects no handler matches are never written.
 *
 * It orchestrates (freshest state, finalizer, cause, due handlers, write, requeue); pure functions decide.
 */
export class ChangeProcessor {
  /** What it keeps per object between runs; forgotten on deletion, or when the object leaves this replica. */
  readonly memories = new ObjectMemories();
  /** Fields watched outside the essence (such as `status.phase`): added to it, so their changes count. */
  private readonly extraFields: FieldPath[];
  private readonly now: () => number;
  private readonly execution: ExecutionEnvironment;
  private readonly identity: Identity;
  private readonly stored: StoredBookkeeping;

  constructor(private readonly options: ChangeProcessorOptions) {
    const clock = options.clock ?? systemClock;
    this.identity = options.identity ?? Identity.DEFAULT;
    this.stored = new StoredBookkeeping(
      options.api.resource,
      this.identity,
      options.logger,
      options.poster,
      options.storage,
    );
    this.now = options.now ?? (() => clock.now());
    this.extraFields = extraFieldsOf(options.handlers);
    this.execution = executionOf(options, this.identity, this.now, clock);
  }

  async process(batch: ChangeBatch): Promise<ProcessResult> {
    const { uid, latest } = batch;
    const memory = this.memories.of(uid);
    if (latest.type === 'DELETED') {
      await this.gone(latest.object, memory, batch.signal);
      this.memories.forget(uid);
      return undefined;
    }
    try {
      return await this.live(batch, memory);
    } finally {
      this.memories.settle(uid); // an idle object keeps a Set entry, not a record
    }
  }

  private async live(batch: ChangeBatch, memory: ObjectMemory): Promise<ProcessResult> {
    // First sight in a listing or an ADDED (moved to this shard member; a new object's runs create handlers only).
    if (!memory.seen && batch.events.some((e) => e.fromList || e.type === 'ADDED'))
      memory.resuming = true;
    const resuming = memory.resuming;
    memory.seen = true;
    const lastWrite = memory.ownWrite;
    const fresh = freshest(lastWrite, batch.events, batch.latest.object, this.now());
    if (fresh.caughtUp) memory.ownWrite = undefined;
    let body = fresh.body;
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await this.cycle(body, {
          memory,
          resuming,
          signal: batch.signal,
          lastWrite,
        });
        memory.failures = 0;
        if (result === undefined) memory.resuming = false; // until then a failed resume handler retries
        return result;
      } catch (caught) {
        const meta = body.metadata ?? {};
        if (caught instanceof WriteSuperseded) {
          this.options.logger.info({ namespace: meta.namespace, name: meta.name }, caught.message);
          return undefined;
        }
        let error = caught;
        if (
          (error instanceof FinalizerConflict ||
            (error instanceof ApiError && error.status === 409)) &&
          attempt < MAX_CONFLICT_RETRIES
        ) {
          try {
            body = await this.options.api.get(meta.namespace, meta.name ?? '');
            continue;
          } catch (readError) {
            // The fresh read failed too (API server down, 5xx): back off like any other failure, never throw.
            error = readError;
          }
        }
        if (error instanceof ApiError && error.status === 404) return undefined; // gone meanwhile; the DELETED event follows
        if (error instanceof ReleaseDeferred) return { requeueAfterMs: error.delayMs }; // the hold logged why
        memory.failures += 1;
        // The server's Retry-After wins over our own backoff: retrying sooner only adds to its load.
        const delay = retryDelayMs(
          error,
          exponentialDelayMs(memory.failures, 1_000, MAX_ERROR_DELAY_MS),
        );
        this.options.logger.error(
          {
            namespace: meta.namespace,
            name: meta.name,
            err: describeError(error),
            retryInMs: delay,
          },
          `processing ${meta.namespace ?? ''}/${meta.name} failed; retrying in ${Math.round(delay / 1000)} s`,
        );
        return { requeueAfterMs: delay, retry: true };
      }
    }
  }

  /** The object is gone without our finalizer on it: optional delete handlers get one best-effort run. */
  private async gone(body: KubeObject, memory: ObjectMemory, signal: AbortSignal): Promise<void> {
    if (hasFinalizer(body, this.identity) || memory.deletionHandled) return;
    const handlers = this.options.handlers.filter(
      (h) =>
        h.kind === 'delete' && h.options.optional && matchesObject(body, h.options, this.execution),
    );
    for (const handler of handlers) {
      const logger = this.handlerLogger(handler, body);
      const change = { old: undefined, new: undefined, diff: [] };
      const { resource, client, now, clock, attemptTimeoutMs, identity } = this.execution;
      const result = await invokeHandler({
        handler,
        body,
        reason: 'delete',
        change,
        signal,
        logger,
        resource,
        client,
        now,
        clock,
        attemptTimeoutMs,
        identity,
      });
      if (result.error !== undefined) {
        logger.warn(
          `optional delete handler failed after the object was gone (not retried): ${describeError(result.error)}`,
        );
      }
    }
  }

  /** One run on the object as `initial`: the finalizer step, then the handlers of its cause. */
  private async cycle(initial: KubeObject, run: ObjectRun): Promise<ProcessResult> {
    const { memory } = run;
    let body = initial;
    if (memory.deletionHandled && body.metadata?.deletionTimestamp) {
      // Its deletion is handled: delete handlers never run again. A stale state can still come: the API
      // server answers the write that takes the last finalizer off (the object goes) with the
      // resourceVersion of the state before it, so a queued event of that version (say, another
      // controller taking its finalizer off meanwhile) passes for the echo of our write. All that can
      // be left is our finalizer, after a removal that failed: it comes off (a 404 means it is gone).
      // Not when the state is that of our own last write's version with the finalizer still on, while
      // that write took it off: the echo of an earlier write of ours (say, the delete handler's status).
      const taken =
        run.lastWrite?.resourceVersion === body.metadata?.resourceVersion &&
        !hasFinalizer(run.lastWrite!.body, this.identity);
      if (hasFinalizer(body, this.identity) && !taken)
        await this.patchFinalizer(body, 'remove', memory);
      return undefined;
    }
    const relevant = this.options.handlers.filter((h) =>
      isRelevant(h, body, this.identity, this.stored.storage, this.execution),
    );
    const step = finalizerStep({
      handled: relevant.length > 0,
      held: this.options.holds?.applies(body) ?? false,
      deleteHandled: relevant.some((h) => h.kind === 'delete' && !h.options.optional),
      hasFinalizer: hasFinalizer(body, this.identity),
      deleting: Boolean(body.metadata?.deletionTimestamp),
    });
    if (step.finalizer !== 'keep') body = await this.patchFinalizer(body, step.finalizer, memory);
    if (step.then === 'release') {
      await this.release(body, memory);
      await this.patchFinalizer(body, 'remove', memory);
    }
    return step.then === 'handle' ? this.handle(body, relevant, run) : undefined;
  }

  /** Finds the cause, runs its due handlers, and writes what they did; requeues while any is pending. */
  private async handle(
    body: KubeObject,
    relevant: readonly ChangeHandlerSpec[],
    { memory, resuming, signal }: ObjectRun,
  ): Promise<ProcessResult> {
    const meta = body.metadata ?? {};
    const deleting = Boolean(meta.deletionTimestamp);
    const essence = essenceOf(body, this.extraFields, this.identity);
    const base = this.stored.diffBaseOf(body, memory);
    const diffBase = base.essence;
    const cause = detectCause({
      deletionRequested: deleting,
      hasFinalizer: hasFinalizer(body, this.identity),
      diffBase,
      essence,
      resuming,
    });
    if (cause.reason === 'noop' || cause.reason === 'free') return undefined;

    // An unusable or copied diff-base counts as none: so does its tag, so progress copied along with it never matches.
    const change: Change = {
      reason: cause.reason,
      tag: changeTag(diffBase === undefined ? undefined : base.raw, meta.uid),
      resuming,
    };
    const selected = selectHandlers(cause, relevant, resuming).map((selection) => ({
      selection,
      stored: this.stored.progressOf(body, selection.handler, change, memory),
    }));
    const state = `${change.reason}\u0000${change.tag}\u0000${deleting}\u0000${JSON.stringify(essence)}`;
    if (waitsForChange(memory.refused, state)) return undefined;
    const unwritten =
      memory.unwritten?.state === state
        ? memory.unwritten.results
        : new Map<string, HandlerResult>();
    const loggerFor = (handler: ChangeHandlerSpec): Logger => this.handlerLogger(handler, body);
    const run = await runHandlers(this.execution, {
      body,
      selected,
      change,
      unwritten,
      loggerFor,
      signal,
    });
    if (signal.aborted) return undefined;

    const { done, blocked } = completion(
      selected.map((item) => item.selection.handler),
      run.records,
      change.reason,
    );
    try {
      await this.write(memory, { body, change, selected, run, done, blocked, signal });
    } catch (error) {
      if (unwritten.size > 0) memory.unwritten = { state, results: unwritten };
      if (isRefusal(error)) return this.refused(body, memory, state, error);
      throw error;
    }
    memory.unwritten = undefined;
    memory.refused = undefined;
    if (done) return undefined;
    const retry = isRetrying(run.records.values()) ? { retry: true } : {};
    return { requeueAfterMs: run.nextDelayMs ?? 0, ...retry };
  }

  /**
   * Sends what the run produced (see `changePatch`): the write without the bookkeeping first, then
   * the one with it (progress and, once the cause is done, the diff-base: the object's annotations, or
   * its status with status storage), so a crash between them re-runs the handler rather than losing
   * its changes; finally, after delete handlers, the finalizer's removal.
   */
  private async write(memory: ObjectMemory, result: RunToWrite): Promise<void> {
    const { body, change, run, done, blocked } = result;
    const input = {
      body,
      patches: run.patches,
      reason: change.reason,
      handlerIds: [
        ...new Set(this.options.handlers.flatMap((h) => [h.id, ...(h.legacyIds ?? [])])),
      ],
      selectedIds: result.selected.map((item) => item.selection.handler.id),
      records: run.records,
      done,
      blocked,
      extraFields: this.extraFields,
      identity: this.identity,
      hasStatus: this.options.api.resource.hasStatus,
    };
    const storage = this.stored.storage;
    const patch = changePatch({ ...input, storage });
    let written: KubeObject | undefined;
    const onWrite = (object: KubeObject): void =>
      void (written = this.remember(object, memory, written ?? body));
    const last = storage === 'status' ? 'status' : 'object';
    await writePatch(this.options.api, body, patch, { onWrite, last, signal: result.signal });
    if (
      storage === 'status' &&
      written !== undefined &&
      droppedBookkeeping(patch, written, this.identity)
    ) {
      // The CRD's status schema prunes unknown fields, so every event would rerun handlers: annotations now.
      this.stored.fallBackToAnnotations();
      const again = changePatch({ ...input, body: written, patches: [], storage: 'annotations' });
      await writePatch(this.options.api, written, again, { onWrite, signal: result.signal });
    }
    if (done && !blocked && change.reason === 'delete' && hasFinalizer(body, this.identity)) {
      await this.release(body, memory);
      await this.patchFinalizer(memory.ownWrite?.body ?? body, 'remove', memory);
    }
  }

  /** A write the API server refused as invalid: one Warning, a few backed-off retries for a 422, then waiting for a change. */
  private refused(
    body: KubeObject,
    memory: ObjectMemory,
    state: string,
    error: ApiError,
  ): ProcessResult {
    const next = afterRefusal(memory.refused, state, error.status);
    memory.refused = next.refused;
    warnOnce(this.stored.warnings(memory), body, refusalWarning(body, state, error));
    if (next.requeueAfterMs === undefined) return undefined;
    return { requeueAfterMs: next.requeueAfterMs, retry: true };
  }

  /** Its deletion is handled: timers and daemons stop first, as the finalizer is what makes deletion wait for them. */
  private async release(body: KubeObject, memory: ObjectMemory): Promise<void> {
    // Handled once every hold let go: a release that failed (ReleaseDeferred) is tried again.
    await this.options.holds?.release(body);
    memory.deletionHandled = true;
  }

  private async patchFinalizer(
    body: KubeObject,
    action: 'add' | 'remove',
    memory: ObjectMemory,
  ): Promise<KubeObject> {
    return patchFinalizer(
      this.options.api,
      body,
      action,
      (written) => this.remember(written, memory, body),
      this.identity,
    );
  }

  /** Keeps our write until the watch delivers it (read-your-writes); it shares strings with the version it replaced, as thousands may wait during a catch-up. */
  private remember(written: KubeObject, memory: ObjectMemory, replaced?: KubeObject): KubeObject {
    if (replaced?.apiVersion !== undefined && replaced.kind !== undefined)
      shareStrings(written, replaced, { apiVersion: replaced.apiVersion, kind: replaced.kind });
    const resourceVersion = written.metadata?.resourceVersion;
    if (written.metadata?.uid && resourceVersion)
      memory.ownWrite = { resourceVersion, body: written, at: this.now() };
    return written;
  }

  private handlerLogger(handler: ChangeHandlerSpec, body: KubeObject): Logger {
    return this.options.logger.child({
      namespace: body.metadata?.namespace,
      name: body.metadata?.name,
      handler: handler.id,
    });
  }
}
