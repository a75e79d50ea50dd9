import { createHash } from 'node:crypto';
import { ApiError, retryDelayMs } from '../api/api-error.js';
import type { ObjectApi } from '../api/object-api.js';
import type { Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import type { ProcessResult } from '../reactor/reactor.js';
import type { ChangeContext, ChangeHandlerSpec } from '../handler/handler-specs.js';
import { diff, narrowDiff, type Diff } from '../state/diff.js';
import { setLongTimeout, type LongTimeout } from '../clock/long-timeout.js';
import { AttemptTimeoutError } from '../clock/time-limit.js';
import { essenceOf, inspectDiffBase, serializeDiffBase, type Essence } from '../state/essence.js';
import { getField, parseFieldPath, type FieldPath } from '../objects/field-path.js';
import { addFinalizerOps, hasFinalizer, removeFinalizerOps } from '../state/finalizers.js';
import { DIFF_BASE_KEY, FINALIZER, progressKey } from '../state/keys.js';
import {
  capMessage,
  changeTag,
  delayRemainingMs,
  inspectProgress,
  isFinished,
  readProgress,
  serializeProgress,
  type ChangeReason,
  type ProgressRecord,
} from '../state/progress.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { ObjectEvent } from '../watching/events.js';
import { objectContext } from '../handler/object-context.js';
import { detectCause, type Cause } from './causes.js';
import { asError, describeError, HandlerRetriesError, HandlerTimeoutError, PermanentError, TemporaryError } from '../handler/errors.js';
import { matchesObject, matchesValue, PRESENT } from '../handler/filters.js';
import { applyMergePatch, emptyPatch, mergeInto, prune, type Patch } from '../handler/patch.js';
import { guardHandlerPatch } from './patch-guard.js';
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
   * The longest one attempt of a handler may run (the operator's default handler timeout): past it,
   * the attempt's signal aborts and it counts as a failure that is retried with backoff, so a hung
   * handler cannot hold its worker slot forever. Unset: no limit beyond the handler's own `timeout`.
   */
  attemptTimeoutMs?: number;
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
/** Attempts at a write the API server refuses as invalid (422) before the change waits for the object to change. */
const MAX_INVALID_WRITE_ATTEMPTS = 5;
/** Warnings remembered per object for `warnOnce`; past it the oldest are forgotten (an Event may repeat, memory stays bounded). */
const MAX_WARNINGS_REMEMBERED = 16;

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
  /**
   * Writes the API server refused as invalid (400, 422), per object, with the state they were for:
   * after the last attempt the object waits for its next change instead of looping.
   */
  private readonly refused = new Map<string, { state: string; attempts: number }>();
  /** Warnings already posted per object (kind and subject), so a bad annotation or write gives one Event, not one per retry. */
  private readonly warned = new Map<string, Set<string>>();
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
    this.refused.delete(uid);
    this.warned.delete(uid);
  }

  /**
   * Posts a Warning Event once per object and `subject` while this process knows the object. Subjects
   * are kept as digests, a few per object: they may embed attacker-sized annotation values.
   */
  private warnOnce(body: KubeObject, subject: string, reason: string, message: string): void {
    const uid = body.metadata?.uid ?? '';
    const seen = this.warned.get(uid) ?? new Set<string>();
    this.warned.set(uid, seen);
    const digest = createHash('sha256').update(subject).digest('base64');
    if (seen.has(digest)) return;
    if (seen.size >= MAX_WARNINGS_REMEMBERED) seen.clear();
    seen.add(digest);
    const meta = body.metadata ?? {};
    this.options.logger.warn({ namespace: meta.namespace, name: meta.name }, message);
    this.options.poster.post(body, 'Warning', reason, message);
  }

  /** A framework annotation that is unusable: logged and reported once, then treated as absent. */
  private invalidAnnotation(body: KubeObject, key: string, problem: string, consequence: string): void {
    const raw = body.metadata?.annotations?.[key] ?? '';
    this.warnOnce(body, `annotation\u0000${key}\u0000${raw}`, 'InvalidAnnotation', `annotation ${key} is unusable (${problem}); ${consequence}`);
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
    const diffBase = this.diffBaseOf(body);
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
    // An unusable or copied diff-base counts as none: so does its tag, so progress copied along with it never matches.
    const tag = changeTag(diffBase === undefined ? undefined : meta.annotations?.[DIFF_BASE_KEY], meta.uid);
    const reason: ChangeReason = cause.reason;
    const patches: Patch[] = [];
    const records = new Map<string, ProgressRecord>();
    const uid = meta.uid ?? '';
    const state = `${reason}\u0000${tag}\u0000${deleting}\u0000${JSON.stringify(essence)}`;
    const refused = this.refused.get(uid);
    if (refused?.state === state && refused.attempts >= MAX_INVALID_WRITE_ATTEMPTS) return undefined; // waits for a change
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
      if (error instanceof ApiError && (error.status === 400 || error.status === 422)) return this.writeRefused(body, state, error);
      throw error;
    }
    this.unwritten.delete(uid);
    this.refused.delete(uid);
    return done ? undefined : { requeueAfterMs: nextDelayMs ?? 0 };
  }

  /**
   * The API server refused our write as invalid: a handler's patch that breaks the resource's schema,
   * annotations past the 256 KiB limit. Retrying the same bytes cannot help, so: one Warning Event, a
   * few backed-off attempts for a 422 (in case it came from something transient, such as a webhook),
   * none for a 400, then the object waits for its next change (or a restart) instead of looping.
   */
  private writeRefused(body: KubeObject, state: string, error: ApiError): ProcessResult {
    const meta = body.metadata ?? {};
    const uid = meta.uid ?? '';
    const previous = this.refused.get(uid);
    const attempts = (previous?.state === state ? previous.attempts : 0) + 1;
    const final = error.status === 400 || attempts >= MAX_INVALID_WRITE_ATTEMPTS;
    this.refused.set(uid, { state, attempts: final ? MAX_INVALID_WRITE_ATTEMPTS : attempts });
    const object = `${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}`;
    this.warnOnce(
      body,
      `refused\u0000${state}`,
      'WriteRefused',
      `the API server refused the framework's write for ${object} (${error.status}): ${capMessage(error.message)}; ` +
        "fix what the message names (a handler's patch, or annotations over 256 KiB); the object is handled again when it changes",
    );
    if (final) return undefined;
    return { requeueAfterMs: Math.min(MAX_ERROR_DELAY_MS, 1_000 * 2 ** (attempts - 1)) };
  }

  /** The object's diff-base, checked: an unusable or another object's diff-base counts as none (a create). */
  private diffBaseOf(body: KubeObject): Essence | undefined {
    const reading = inspectDiffBase(body);
    if (reading.problem !== undefined) {
      this.invalidAnnotation(body, DIFF_BASE_KEY, reading.problem, 'it is ignored and the object is handled as new');
    } else if (reading.foreign !== undefined) {
      const meta = body.metadata ?? {};
      this.options.logger.info(
        { namespace: meta.namespace, name: meta.name, diffBaseUid: reading.foreign },
        `${DIFF_BASE_KEY} was written for another object (uid ${reading.foreign}), copied with this one; handling the object as new`,
      );
    }
    return reading.essence;
  }

  /**
   * Object-level filters. For update handlers, `field`+`value` also matches the field's old value (from the
   * diff-base), as documented and as in Kopf; otherwise a change away from the value could never run them.
   */
  private matches(handler: ChangeHandlerSpec, body: KubeObject): boolean {
    const { field, value } = handler.options;
    // As in Kopf: for create, resume and delete handlers, `field` without `value` means "the field is present".
    if (handler.kind !== 'update' && field !== undefined && value === undefined) return matchesObject(body, { ...handler.options, value: PRESENT });
    if (matchesObject(body, handler.options)) return true;
    if (handler.kind !== 'update' || field === undefined || value === undefined) return false;
    const old = inspectDiffBase(body).essence;
    return old !== undefined && matchesObject(body, { ...handler.options, value: undefined }) && matchesValue(getField(old, parseFieldPath(field)), value);
  }

  /** The handlers this cause runs, with their progress, `old`/`new`/`diff` narrowed to their field. */
  private select(cause: Cause, relevant: readonly ChangeHandlerSpec[], body: KubeObject, resuming: boolean): Selected[] {
    const withRecord = (handler: ChangeHandlerSpec, old: unknown = undefined, current: unknown = undefined, changes: Diff = []): Selected => ({
      handler,
      record: this.progressOf(body, handler),
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

  /** A handler's stored progress, checked: an unusable record counts as none, reported once. */
  private progressOf(body: KubeObject, handler: ChangeHandlerSpec): ProgressRecord | undefined {
    const reading = inspectProgress(body, handler.id);
    if (reading.problem !== undefined) {
      this.invalidAnnotation(body, progressKey(handler.id), reading.problem, `it is ignored and ${handler.id} runs as if it had no progress`);
    }
    return reading.record;
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
    // A start in the future (a forged or skewed record) would stretch the handler's timeout: clamp it.
    const startedAt = record?.started ? Math.min(Date.parse(record.started), now) : now;
    const retries = record?.retries ?? 0;
    const base: ProgressRecord = { started: new Date(startedAt).toISOString(), purpose: reason, base: tag };
    const logger = this.handlerLogger(handler, body);
    const { retries: maxRetries, timeout } = handler.options;
    const fail = (error: unknown, attempts: number): ProgressRecord => {
      const message = capMessage(blocksDeletion(handler, reason) ? `${describeError(error)}; ${deletionBlockedNotice(body)}` : describeError(error));
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
    outcome: { patch: Patch; error?: Error },
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
    // The stack says where a handler failed; at debug level, as the one-line message is logged below anyway.
    logger.debug({ err: describeError(error), stack: error.stack }, `handler ${handler.id} threw`);
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
    const message = capMessage(describeError(error));
    logger.warn({ err: message, retries: attempts, delaySeconds }, `handler ${handler.id} failed; retrying in ${delaySeconds} s`);
    this.options.poster.post(body, 'Warning', 'HandlerRetrying', `${handler.id} failed (attempt ${attempts}), retrying in ${delaySeconds} s: ${message}`);
    return {
      record: { ...base, delayed: new Date(this.now() + delaySeconds * 1000).toISOString(), retries: attempts, message },
      patch: outcome.patch,
    };
  }

  /**
   * Calls the handler with its context; resolves with its patch (checked by `guardHandlerPatch`) and
   * what it threw, if anything: any throw, `undefined` included, is a failure.
   */
  private async invoke(
    handler: ChangeHandlerSpec,
    body: KubeObject,
    reason: ChangeReason,
    timing: { startedAt: number; retry: number; remainingMs?: number } | undefined,
    change: Pick<Selected, 'old' | 'new' | 'diff'>,
    signal: AbortSignal,
  ): Promise<{ patch: Patch; error?: Error }> {
    const patch = emptyPatch();
    const controller = new AbortController();
    const onStop = (): void => controller.abort(signal.reason);
    signal.addEventListener('abort', onStop, { once: true });
    let timer: LongTimeout | undefined;
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
      const limit = this.attemptLimit(handler, timing?.remainingMs);
      if (limit !== undefined) {
        const timedOut = new Promise<never>((_, reject) => {
          timer = setLongTimeout(() => {
            controller.abort(limit.error());
            reject(controller.signal.reason);
          }, limit.ms);
        });
        await Promise.race([run, timedOut]);
      } else {
        await run;
      }
      const guarded = this.guarded(patch, body);
      if (guarded.problem !== undefined) return { patch: emptyPatch(), error: new PermanentError(guarded.problem) };
      return { patch: guarded.patch };
    } catch (error) {
      // A failed attempt's patch is still sent (status it set, say): it goes through the same guard.
      const guarded = this.guarded(patch, body);
      return { patch: guarded.patch ?? emptyPatch(), error: asError(error) };
    } finally {
      timer?.clear();
      signal.removeEventListener('abort', onStop);
    }
  }

  /**
   * The handler's patch as it is now, copied (an abandoned attempt may still be changing the object it
   * was given) and checked by `guardHandlerPatch`.
   */
  private guarded(patch: Patch, body: KubeObject): ReturnType<typeof guardHandlerPatch> {
    let copy: Patch;
    try {
      copy = structuredClone(patch);
    } catch (error) {
      return { problem: `the handler's patch cannot be sent: ${describeError(error)}` };
    }
    return guardHandlerPatch(copy, body);
  }

  /** The sooner of the handler's remaining `timeout` (permanent) and the operator's attempt limit (retried). */
  private attemptLimit(handler: ChangeHandlerSpec, remainingMs: number | undefined): { ms: number; error: () => Error } | undefined {
    const own = remainingMs === undefined ? undefined : Math.max(0, remainingMs);
    const attempt = this.options.attemptTimeoutMs;
    if (attempt !== undefined && (own === undefined || attempt < own)) {
      return { ms: attempt, error: () => new AttemptTimeoutError(attempt) };
    }
    if (own !== undefined) return { ms: own, error: () => new HandlerTimeoutError(`timed out after ${handler.options.timeout} s`) };
    return undefined;
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
    // look like a change to a field handler when they come back. Empty parts of the patch (the
    // `labels: {}` every patch starts with) must not appear in it as fields the object lacks.
    const handled = applyMergePatch(body, prune(merged) ?? {});

    const annotations: Record<string, string | null> = {};
    const existing = meta.annotations ?? {};
    if (done && cause.reason !== 'delete') {
      // Purge every progress record (this cause's or an abandoned one's), except final failures: those
      // stay so users can read what went wrong (`message`) until the next change. A resume is no
      // change, so the failures of earlier handlers stay through restarts too.
      for (const handler of this.options.handlers) {
        const key = progressKey(handler.id);
        const record = records.get(handler.id);
        if (!record && cause.reason === 'resume' && readProgress(body, handler.id)?.failure) continue;
        if (record?.failure) {
          const value = serializeProgress(record);
          if (existing[key] !== value) annotations[key] = value;
        } else if (existing[key] !== undefined) {
          annotations[key] = null;
        }
      }
      const handledEssence = essenceOf(handled, this.extraFields);
      // An equal diff-base stays as it is, even one stored before diff-bases named their uid: a restart
      // on an unchanged world writes nothing.
      const stored = inspectDiffBase(body).essence;
      if (stored === undefined || diff(stored, handledEssence).length > 0) annotations[DIFF_BASE_KEY] = serializeDiffBase(handledEssence, meta.uid);
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
