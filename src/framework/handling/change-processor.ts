import { ApiError, retryDelayMs } from '../api/api-error.js';
import type { ObjectApi } from '../api/object-api.js';
import type { Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import type { ProcessResult } from '../reactor/reactor.js';
import type { ChangeContext, ChangeHandlerSpec } from '../registry/handler-specs.js';
import { narrowDiff, type Diff } from '../state/diff.js';
import { essenceOf, readDiffBase, serializeDiffBase, type Essence } from '../state/essence.js';
import { getField, parseFieldPath, type FieldPath } from '../state/field-path.js';
import { addFinalizerOps, hasFinalizer, removeFinalizerOps } from '../state/finalizers.js';
import { DIFF_BASE_KEY, FINALIZER, progressKey } from '../state/keys.js';
import {
  changeTag,
  delayRemainingMs,
  isFinished,
  readProgress,
  serializeProgress,
  type ChangeReason,
  type ProgressRecord,
} from '../state/progress.js';
import type { KubeObject, ObjectEvent } from '../watching/events.js';
import { objectContext } from '../engines/object-context.js';
import { detectCause, type Cause } from './causes.js';
import { describeError, HandlerRetriesError, HandlerTimeoutError, PermanentError, TemporaryError } from './errors.js';
import { matchesObject, matchesValue } from './filters.js';
import { applyMergePatch, emptyPatch, mergeInto, type Patch } from './patch.js';
import { writePatch } from './patch-writer.js';

/** What one processing run needs; the reactor provides it. */
export interface ChangeBatch {
  uid: string;
  latest: ObjectEvent<KubeObject>;
  events: readonly ObjectEvent<KubeObject>[];
  signal: AbortSignal;
}

export interface ChangeProcessorOptions {
  api: ObjectApi;
  handlers: readonly ChangeHandlerSpec[];
  logger: Logger;
  poster: EventPoster;
  metrics?: Metrics;
  now?: () => number;
  /**
   * Other work that holds objects with the framework finalizer (timers, daemons): `applies` says it
   * wants an object; `release` stops it for an object being deleted, before the finalizer comes off.
   */
  holds?: {
    applies(body: KubeObject): boolean;
    release(body: KubeObject): Promise<void>;
  };
}

/** A handler chosen for this cause, with its stored progress. */
interface Selected {
  handler: ChangeHandlerSpec;
  record: ProgressRecord | undefined;
  old: unknown;
  new: unknown;
  diff: Diff;
}

const MAX_CONFLICT_RETRIES = 5;
/** How long we trust our own write over the watch when resourceVersions cannot be compared. */
const OWN_WRITE_TRUST_MS = 5_000;
const MAX_ERROR_DELAY_MS = 60_000;

class Conflict extends Error {}

/**
 * Runs change handlers (create, update, field, delete, resume) for one resource with Kopf's semantics,
 * keeping progress in annotations so retries survive restarts, and writing as little as possible:
 * handlers' patches, progress and the diff-base go out as one merge PATCH (status as one PATCH on its
 * subresource), the finalizer as a test-guarded JSON patch. Objects no handler matches are never written.
 */
export class ChangeProcessor {
  /** Our last write per object until the watch delivers it (read-your-writes). */
  private readonly ownWrites = new Map<string, { resourceVersion: string; body: KubeObject; at: number }>();
  /** Objects whose deletion we handled while holding them (so optional delete handlers do not run again when they are gone). */
  private readonly deletions = new Set<string>();
  /** Objects this process has looked at (to tell resumed objects from new ones). */
  private readonly seen = new Set<string>();
  /** Objects first seen through a listing and not yet fully handled: resume handlers stay due until then (Kopf's `initial`). */
  private readonly resuming = new Set<string>();
  /** Consecutive framework-level failures per object (write errors), for backoff. */
  private readonly failures = new Map<string, number>();
  /**
   * Finished handler runs whose result could not be written (API server down, 5xx, 403), per object,
   * with the state they ran for. While the object stays in that state, a retry writes these results
   * instead of running the handlers again, so an outage does not repeat side effects.
   */
  private readonly unwritten = new Map<string, { state: string; outcomes: Map<string, { patch: Patch; record: ProgressRecord }> }>();
  private readonly extraFields: FieldPath[];
  private readonly now: () => number;

  constructor(private readonly options: ChangeProcessorOptions) {
    this.now = options.now ?? Date.now;
    // Fields watched outside the essence (such as `status.phase`) are added to it, so their changes count.
    this.extraFields = options.handlers
      .map((h) => h.options.field)
      .filter((field): field is string => field !== undefined && !field.startsWith('spec.') && field !== 'spec')
      .map((field) => parseFieldPath(field));
  }

  async process(batch: ChangeBatch): Promise<ProcessResult> {
    const { uid, latest } = batch;
    if (latest.type === 'DELETED') {
      await this.gone(latest.object, batch.signal);
      this.forget(uid);
      return undefined;
    }
    // Kept until a run completes, so a failed resume handler is retried on the requeue, not only on first sight.
    if (!this.seen.has(uid) && batch.events.some((e) => e.fromList)) this.resuming.add(uid);
    const resuming = this.resuming.has(uid);
    this.seen.add(uid);
    let body = this.freshest(uid, batch);
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await this.cycle(body, resuming, batch.signal);
        this.failures.delete(uid);
        if (result === undefined) this.resuming.delete(uid);
        return result;
      } catch (caught) {
        const meta = body.metadata ?? {};
        let error = caught;
        if ((error instanceof Conflict || (error instanceof ApiError && error.status === 409)) && attempt < MAX_CONFLICT_RETRIES) {
          try {
            body = await this.options.api.get(meta.namespace, meta.name ?? '');
            continue;
          } catch (readError) {
            // The fresh read failed too (API server down, 5xx): back off like any other failure, never throw.
            error = readError;
          }
        }
        if (error instanceof ApiError && error.status === 404) return undefined; // gone meanwhile; the DELETED event follows
        const count = (this.failures.get(uid) ?? 0) + 1;
        this.failures.set(uid, count);
        // The server's Retry-After wins over our own backoff: retrying sooner only adds to its load.
        const delay = retryDelayMs(error, Math.min(MAX_ERROR_DELAY_MS, 1_000 * 2 ** (count - 1)));
        this.options.logger.error(
          { namespace: meta.namespace, name: meta.name, err: describeError(error), retryInMs: delay },
          `processing ${meta.namespace ?? ''}/${meta.name} failed; retrying in ${Math.round(delay / 1000)} s`,
        );
        return { requeueAfterMs: delay };
      }
    }
  }

  private forget(uid: string): void {
    this.ownWrites.delete(uid);
    this.seen.delete(uid);
    this.resuming.delete(uid);
    this.failures.delete(uid);
    this.deletions.delete(uid);
    this.unwritten.delete(uid);
  }

  /** The newest known state: the event's, unless our own later write has not come back through the watch yet. */
  private freshest(uid: string, batch: ChangeBatch): KubeObject {
    const own = this.ownWrites.get(uid);
    if (!own) return batch.latest.object;
    const latest = batch.latest.object.metadata?.resourceVersion;
    // Caught up when the watch delivered our write, or anything newer. resourceVersions are opaque, but
    // etcd's are integers: compare them when they are; otherwise trust our write for a few seconds only,
    // so a relist that skipped our exact version can never pin us to a stale copy.
    const caughtUp =
      batch.events.some((e) => e.object.metadata?.resourceVersion === own.resourceVersion) ||
      (isInteger(latest) && isInteger(own.resourceVersion) ? BigInt(latest!) >= BigInt(own.resourceVersion) : this.now() - own.at > OWN_WRITE_TRUST_MS);
    if (caughtUp) {
      this.ownWrites.delete(uid);
      return batch.latest.object;
    }
    return own.body;
  }

  private remember(body: KubeObject): KubeObject {
    const uid = body.metadata?.uid;
    const resourceVersion = body.metadata?.resourceVersion;
    if (uid && resourceVersion) this.ownWrites.set(uid, { resourceVersion, body, at: this.now() });
    return body;
  }

  /** The object is gone without our finalizer on it: optional delete handlers get one best-effort run. */
  private async gone(body: KubeObject, signal: AbortSignal): Promise<void> {
    if (hasFinalizer(body) || this.deletions.has(body.metadata?.uid ?? '')) return;
    const handlers = this.options.handlers.filter((h) => h.kind === 'delete' && h.options.optional && matchesObject(body, h.options));
    for (const handler of handlers) {
      const outcome = await this.invoke(handler, body, 'delete', undefined, { old: undefined, new: undefined, diff: [] }, signal);
      if (outcome.error !== undefined) {
        this.handlerLogger(handler, body).warn(`optional delete handler failed after the object was gone (not retried): ${describeError(outcome.error)}`);
      }
    }
  }

  private async cycle(initial: KubeObject, resuming: boolean, signal: AbortSignal): Promise<ProcessResult> {
    let body = initial;
    const meta = body.metadata ?? {};
    const relevant = this.options.handlers.filter((h) => this.matches(h, body));
    const held = this.options.holds?.applies(body) ?? false;
    if (relevant.length === 0 && !held) {
      // Stealth: an object no handler wants is never written to. But our finalizer left on an object that
      // stopped matching (say, a label was removed) would block its deletion forever, so it comes off.
      if (hasFinalizer(body)) await this.patchFinalizers(body, 'remove');
      return undefined;
    }

    const deleting = Boolean(meta.deletionTimestamp);
    const needsFinalizer = held || relevant.some((h) => h.kind === 'delete' && !h.options.optional);
    if (needsFinalizer && !hasFinalizer(body) && !deleting) {
      body = await this.patchFinalizers(body, 'add');
    } else if (!needsFinalizer && hasFinalizer(body) && !deleting) {
      body = await this.patchFinalizers(body, 'remove');
    }
    if (relevant.length === 0) {
      // Held only by timers or daemons: no change handlers, so no diff-base to keep; just let it go when deleted.
      if (deleting && hasFinalizer(body)) {
        this.deletions.add(meta.uid ?? '');
        await this.options.holds?.release(body);
        await this.patchFinalizers(body, 'remove');
      }
      return undefined;
    }

    const essence = essenceOf(body, this.extraFields);
    let diffBase: Essence | undefined;
    try {
      diffBase = readDiffBase(body);
    } catch (error) {
      this.options.logger.warn({ namespace: meta.namespace, name: meta.name }, `unreadable ${DIFF_BASE_KEY} (${describeError(error)}); handling the object as new`);
    }
    const cause = detectCause({
      deleted: false,
      deletionRequested: deleting,
      hasFinalizer: hasFinalizer(body),
      diffBase,
      essence,
      resuming,
    });
    if (cause.reason === 'noop' || cause.reason === 'free' || cause.reason === 'gone') return undefined;

    const selected = this.select(cause, relevant, body, resuming);
    const tag = changeTag(meta.annotations?.[DIFF_BASE_KEY]);
    const reason: ChangeReason = cause.reason;
    const patches: Patch[] = [];
    const records = new Map<string, ProgressRecord>();
    const uid = meta.uid ?? '';
    const state = `${reason}\u0000${tag}\u0000${deleting}\u0000${JSON.stringify(essence)}`;
    const pending = this.unwritten.get(uid);
    const unwritten = pending?.state === state ? pending.outcomes : new Map<string, { patch: Patch; record: ProgressRecord }>();
    let nextDelayMs: number | undefined;
    for (const item of selected) {
      // A record counts only for this very change: same cause, same diff-base.
      let record = item.record?.purpose === reason && item.record.base === tag ? item.record : undefined;
      // A delete handler that failed for good holds the object; a new process (perhaps with a fix) tries it once more.
      if (record?.failure && resuming && blocksDeletion(item.handler, reason)) record = undefined;
      if (isFinished(record)) {
        records.set(item.handler.id, record!);
        continue;
      }
      const ran = unwritten.get(item.handler.id);
      if (ran) {
        patches.push(ran.patch);
        records.set(item.handler.id, ran.record);
        continue;
      }
      const wait = delayRemainingMs(record, this.now());
      if (wait > 0) {
        records.set(item.handler.id, record!);
        nextDelayMs = Math.min(nextDelayMs ?? wait, wait);
        continue;
      }
      const outcome = await this.attempt(item, record, body, reason, tag, signal);
      patches.push(outcome.patch);
      records.set(item.handler.id, outcome.record);
      if (isFinished(outcome.record)) unwritten.set(item.handler.id, outcome);
      if (!isFinished(outcome.record)) {
        const delay = delayRemainingMs(outcome.record, this.now());
        nextDelayMs = Math.min(nextDelayMs ?? delay, delay);
      }
    }
    if (signal.aborted) return undefined;

    const done = [...records.values()].every(isFinished);
    // Only success lets our finalizer go: a delete handler that failed for good keeps the object.
    const blocked = done && selected.some((item) => blocksDeletion(item.handler, reason) && records.get(item.handler.id)?.failure === true);
    try {
      await this.write(body, cause, selected, records, patches, done, blocked);
    } catch (error) {
      if (unwritten.size > 0) this.unwritten.set(uid, { state, outcomes: unwritten });
      throw error;
    }
    this.unwritten.delete(uid);
    return done ? undefined : { requeueAfterMs: nextDelayMs ?? 0 };
  }

  /**
   * Object-level filters. For update handlers, `field`+`value` also matches the field's old value (from the
   * diff-base), as documented and as in Kopf; otherwise a change away from the value could never run them.
   */
  private matches(handler: ChangeHandlerSpec, body: KubeObject): boolean {
    if (matchesObject(body, handler.options)) return true;
    const { field, value } = handler.options;
    if (handler.kind !== 'update' || field === undefined || value === undefined) return false;
    let old: Essence | undefined;
    try {
      old = readDiffBase(body);
    } catch {
      return false;
    }
    return old !== undefined && matchesObject(body, { ...handler.options, value: undefined }) && matchesValue(getField(old, parseFieldPath(field)), value);
  }

  /** The handlers this cause runs, with their progress, `old`/`new`/`diff` narrowed to their field. */
  private select(cause: Cause, relevant: readonly ChangeHandlerSpec[], body: KubeObject, resuming: boolean): Selected[] {
    const withRecord = (handler: ChangeHandlerSpec, old: unknown = undefined, current: unknown = undefined, changes: Diff = []): Selected => ({
      handler,
      record: readProgress(body, handler.id),
      old,
      new: current,
      diff: changes,
    });
    switch (cause.reason) {
      case 'create':
        return relevant.filter((h) => h.kind === 'create').map((h) => withRecord(h));
      case 'resume':
        return relevant.filter((h) => h.kind === 'resume').map((h) => withRecord(h));
      case 'delete':
        return relevant
          .filter((h) => h.kind === 'delete' || (h.kind === 'resume' && resuming && h.options.deleted))
          .map((h) => withRecord(h));
      case 'update': {
        const chosen: Selected[] = [];
        for (const handler of relevant) {
          if (handler.kind === 'resume' && resuming) chosen.push(withRecord(handler));
          if (handler.kind !== 'update') continue;
          const field = handler.options.field;
          const path = field ? parseFieldPath(field) : undefined;
          const changes = path ? narrowDiff(cause.diff, path) : cause.diff;
          if (changes.length === 0) continue;
          const old = path ? getField(cause.old, path) : cause.old;
          const current = path ? getField(cause.new, path) : cause.new;
          const { value, old: oldFilter, new: newFilter } = handler.options;
          if (value !== undefined && !matchesValue(old, value) && !matchesValue(current, value)) continue;
          if (!matchesValue(old, oldFilter) || !matchesValue(current, newFilter)) continue;
          chosen.push(withRecord(handler, old, current, changes));
        }
        return chosen;
      }
      default:
        return [];
    }
  }

  /** One attempt of one handler, turned into its next progress record. */
  private async attempt(
    item: Selected,
    record: ProgressRecord | undefined,
    body: KubeObject,
    reason: ChangeReason,
    tag: string,
    signal: AbortSignal,
  ): Promise<{ record: ProgressRecord; patch: Patch }> {
    const { handler } = item;
    const now = this.now();
    const startedAt = record?.started ? Date.parse(record.started) : now;
    const retries = record?.retries ?? 0;
    const base: ProgressRecord = { started: new Date(startedAt).toISOString(), purpose: reason, base: tag };
    const logger = this.handlerLogger(handler, body);
    const { retries: maxRetries, timeout } = handler.options;
    const fail = (error: unknown, attempts: number): ProgressRecord => {
      const message = blocksDeletion(handler, reason) ? `${describeError(error)}; ${deletionBlockedNotice(body)}` : describeError(error);
      logger.error({ err: message, retries: attempts }, `handler ${handler.id} failed permanently: ${message}`);
      this.options.poster.post(body, 'Warning', 'HandlerFailed', `${handler.id} failed permanently: ${message}`);
      return { ...base, stopped: new Date(this.now()).toISOString(), failure: true, retries: attempts, message };
    };
    if (maxRetries !== undefined && retries >= maxRetries) {
      return { record: fail(new HandlerRetriesError(`gave up after ${retries} attempts`), retries), patch: emptyPatch() };
    }
    if (timeout !== undefined && now - startedAt >= timeout * 1000) {
      return { record: fail(new HandlerTimeoutError(`timed out after ${timeout} s`), retries), patch: emptyPatch() };
    }
    const remainingMs = timeout !== undefined ? timeout * 1000 - (now - startedAt) : undefined;
    const began = performance.now();
    const outcome = await this.invoke(handler, body, reason, { startedAt, retry: retries, remainingMs }, item, signal);
    const metrics = this.options.metrics ?? noMetrics;
    metrics.observe?.('handler_duration_seconds', (performance.now() - began) / 1000, { handler: handler.id });
    const attempts = retries + 1;
    const result = await this.settle(item, outcome, body, base, attempts, startedAt, logger, fail);
    metrics.increment('handler_runs_total', { handler: handler.id, result: result.record.success ? 'success' : result.record.failure ? 'failure' : 'retry' });
    return result;
  }

  /** Turns one attempt's outcome into the handler's next progress record. */
  private async settle(
    item: Selected,
    outcome: { patch: Patch; error?: unknown },
    body: KubeObject,
    base: ProgressRecord,
    attempts: number,
    startedAt: number,
    logger: Logger,
    fail: (error: unknown, attempts: number) => ProgressRecord,
  ): Promise<{ record: ProgressRecord; patch: Patch }> {
    const { handler } = item;
    const { retries: maxRetries, timeout } = handler.options;
    const retries = attempts - 1;
    if (outcome.error === undefined) {
      logger.info(`handler ${handler.id} succeeded`);
      return { record: { ...base, stopped: new Date(this.now()).toISOString(), success: true, retries: attempts }, patch: outcome.patch };
    }
    const error = outcome.error;
    const mode = handler.options.errors ?? 'temporary';
    if (error instanceof PermanentError) return { record: fail(error, attempts), patch: outcome.patch };
    if (!(error instanceof TemporaryError)) {
      if (mode === 'permanent') return { record: fail(error, attempts), patch: outcome.patch };
      if (mode === 'ignored') {
        logger.warn({ err: describeError(error) }, `handler ${handler.id} failed; ignored as configured`);
        return { record: { ...base, stopped: new Date(this.now()).toISOString(), success: true, retries: attempts }, patch: outcome.patch };
      }
    }
    const delaySeconds = error instanceof TemporaryError ? error.delay : (handler.options.backoff ?? Math.min(60, 2 ** retries));
    if (maxRetries !== undefined && attempts >= maxRetries) {
      return { record: fail(new HandlerRetriesError(`${describeError(error)} (gave up after ${attempts} attempts)`), attempts), patch: outcome.patch };
    }
    if (timeout !== undefined && this.now() + delaySeconds * 1000 - startedAt >= timeout * 1000) {
      return { record: fail(new HandlerTimeoutError(`${describeError(error)} (would exceed its ${timeout} s timeout)`), attempts), patch: outcome.patch };
    }
    const message = describeError(error);
    logger.warn({ err: message, retries: attempts, delaySeconds }, `handler ${handler.id} failed; retrying in ${delaySeconds} s`);
    this.options.poster.post(body, 'Warning', 'HandlerRetrying', `${handler.id} failed (attempt ${attempts}), retrying in ${delaySeconds} s: ${message}`);
    return {
      record: { ...base, delayed: new Date(this.now() + delaySeconds * 1000).toISOString(), retries: attempts, message },
      patch: outcome.patch,
    };
  }

  /** Calls the handler with its context; resolves with its patch and what it threw, if anything. */
  private async invoke(
    handler: ChangeHandlerSpec,
    body: KubeObject,
    reason: ChangeReason,
    timing: { startedAt: number; retry: number; remainingMs?: number } | undefined,
    change: Pick<Selected, 'old' | 'new' | 'diff'>,
    signal: AbortSignal,
  ): Promise<{ patch: Patch; error?: unknown }> {
    const patch = emptyPatch();
    const controller = new AbortController();
    const onStop = (): void => controller.abort(signal.reason);
    signal.addEventListener('abort', onStop, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const startedAt = timing?.startedAt ?? this.now();
    const context: ChangeContext = {
      ...objectContext(body, this.handlerLogger(handler, body), this.options.api.resource, this.options.api.client),
      patch,
      reason,
      old: change.old,
      new: change.new,
      diff: change.diff,
      retry: timing?.retry ?? 0,
      started: new Date(startedAt),
      runtime: this.now() - startedAt,
      signal: controller.signal,
    };
    try {
      const run = Promise.resolve().then(() => handler.fn(context));
      if (timing?.remainingMs !== undefined) {
        const remaining = Math.max(0, timing.remainingMs);
        const timedOut = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            controller.abort(new HandlerTimeoutError(`timed out after ${handler.options.timeout} s`));
            reject(controller.signal.reason);
          }, remaining);
        });
        await Promise.race([run, timedOut]);
      } else {
        await run;
      }
      return { patch };
    } catch (error) {
      return { patch, error };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onStop);
    }
  }

  /**
   * Sends what the cycle produced: status first (so a crash before the main PATCH re-runs the handler
   * rather than losing status), then one merge PATCH with the handlers' changes, progress and, once
   * the cause is done, the diff-base; finally, after delete handlers, the finalizer's removal.
   */
  private async write(
    body: KubeObject,
    cause: Cause,
    selected: readonly Selected[],
    records: ReadonlyMap<string, ProgressRecord>,
    patches: readonly Patch[],
    done: boolean,
    blocked: boolean,
  ): Promise<void> {
    const meta = body.metadata ?? {};
    const namespace = meta.namespace;
    const name = meta.name ?? '';
    const merged: Record<string, unknown> = {};
    for (const patch of patches) mergeInto(merged, patch);
    // The diff-base includes everything the handlers wrote (status too), so their own writes never
    // look like a change to a field handler when they come back.
    const handled = applyMergePatch(body, merged);

    const annotations: Record<string, string | null> = {};
    const existing = meta.annotations ?? {};
    if (done && cause.reason !== 'delete') {
      // Purge every progress record (this cause's or an abandoned one's), except final failures of this
      // change: those stay so users can read what went wrong (`message`) until the next change.
      for (const handler of this.options.handlers) {
        const key = progressKey(handler.id);
        const record = records.get(handler.id);
        if (record?.failure) {
          const value = serializeProgress(record);
          if (existing[key] !== value) annotations[key] = value;
        } else if (existing[key] !== undefined) {
          annotations[key] = null;
        }
      }
      const diffBase = serializeDiffBase(essenceOf(handled, this.extraFields));
      if (existing[DIFF_BASE_KEY] !== diffBase) annotations[DIFF_BASE_KEY] = diffBase;
    } else if (!done || blocked) {
      // Pending records, or the failure that keeps a deleted object: users read its message there.
      for (const item of selected) {
        const record = records.get(item.handler.id);
        const key = progressKey(item.handler.id);
        if (!record) continue;
        const value = serializeProgress(record);
        if (existing[key] !== value) annotations[key] = value;
      }
    }
    mergeInto(merged, { metadata: { annotations } });
    await writePatch(this.options.api, namespace, name, merged, (written) => this.remember(written));
    if (done && !blocked && cause.reason === 'delete' && hasFinalizer(body)) {
      this.deletions.add(meta.uid ?? '');
      // Timers and daemons stop first: the finalizer is what makes deletion wait for them.
      await this.options.holds?.release(body);
      const latest = this.ownWrites.get(meta.uid ?? '')?.body ?? body;
      await this.patchFinalizers(latest, 'remove');
    }
  }

  /** Adds or removes our finalizer; a failed `test` (422) re-reads the object and tries again. */
  private async patchFinalizers(body: KubeObject, action: 'add' | 'remove'): Promise<KubeObject> {
    let current = body;
    for (let attempt = 0; attempt < MAX_CONFLICT_RETRIES; attempt++) {
      const meta = current.metadata ?? {};
      const ops = action === 'add' ? addFinalizerOps(current) : removeFinalizerOps(current);
      if (ops.length === 0 || (action === 'add' && hasFinalizer(current))) return current;
      try {
        return this.remember(await this.options.api.jsonPatch(meta.namespace, meta.name ?? '', ops));
      } catch (error) {
        if (!(error instanceof ApiError && (error.status === 422 || error.status === 409))) throw error;
        current = await this.options.api.get(meta.namespace, meta.name ?? '');
      }
    }
    throw new Conflict(`could not ${action} the finalizer: the object kept changing`);
  }

  private handlerLogger(handler: ChangeHandlerSpec, body: KubeObject): Logger {
    return this.options.logger.child({ namespace: body.metadata?.namespace, name: body.metadata?.name, handler: handler.id });
  }
}

/** Whether this handler's final failure keeps the object: a non-optional delete handler, handling a deletion. */
function blocksDeletion(handler: ChangeHandlerSpec, reason: ChangeReason): boolean {
  return reason === 'delete' && handler.kind === 'delete' && !handler.options.optional;
}

/** What a user must know when a delete handler failed for good: the object stays, and how it can go. */
function deletionBlockedNotice(body: KubeObject): string {
  const meta = body.metadata ?? {};
  const object = `${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}`;
  return (
    `${object} keeps the finalizer ${FINALIZER} and stays until the handler's problem is fixed ` +
    `(the operator, restarted with a fix, runs the handler again) or the finalizer is removed by hand`
  );
}

function isInteger(value: string | undefined): boolean {
  return value !== undefined && /^\d+$/.test(value);
}
