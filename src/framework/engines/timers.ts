import { ApiError } from '../api/api-error.js';
import type { ObjectApi } from '../api/object-api.js';
import { setLongTimeout, type LongTimeout } from '../clock/long-timeout.js';
import { withTimeLimit } from '../clock/time-limit.js';
import { asError, describeError, PermanentError, TemporaryError } from '../handler/errors.js';
import { matchesObject } from '../handler/filters.js';
import { emptyPatch, mergeInto } from '../handler/patch.js';
import { writePatch } from '../handling/patch-writer.js';
import type { Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import type { TimerContext, TimerSpec } from '../handler/handler-specs.js';
import { essenceOf } from '../state/essence.js';
import { annotationName, PREFIX } from '../state/keys.js';
import type { KubeObject } from '../objects/kube-object.js';
import { toMilliseconds } from '../clock/duration.js';
import { objectContext } from '../handler/object-context.js';
import { nextRunAt, type TimerSchedule, type TimerState } from './schedule.js';
import { readTimerRecord, type PersistedTimer } from './timer-record.js';

const DEFAULT_PERSIST_THRESHOLD_MS = 60_000;

function exitingKey(uid: string, timerId: string): string {
  return `${uid}/${timerId}`;
}

/** The annotation holding a long timer's schedule. */
export function timerKey(timerId: string): string {
  return `${PREFIX}/${annotationName(`timer.${timerId}`)}`;
}

/** The Event reason for a framework annotation that is not what the framework writes. */
const INVALID_ANNOTATION = 'InvalidAnnotation';

interface TimerSlot {
  spec: TimerSpec;
  /** Made once per slot: a child logger per tick would cost more than the tick itself. */
  logger: Logger;
  /** The schedule for one state of the object (a computed interval depends on it). */
  cached?: { body: KubeObject; schedule: TimerSchedule; persists: boolean };
  state: TimerState;
  failures: number;
  timeout?: LongTimeout;
  plannedAt?: number;
  running?: Promise<void>;
  /** The run of this timer's previous slot on the object, still ending: the first run waits for it. */
  previous?: Promise<void>;
  abort: AbortController;
  stopped: boolean;
  /** A run failed with a PermanentError: no more runs for this object until it changes (or a restart), as in Kopf. */
  halted?: boolean;
}

interface TimedObject {
  body: KubeObject;
  essence: string;
  slots: Map<string, TimerSlot>;
}

export interface TimerEngineOptions {
  api: ObjectApi;
  timers: readonly TimerSpec[];
  logger: Logger;
  poster: EventPoster;
  metrics?: Metrics;
  now?: () => number;
  /**
   * A run taking longer is abandoned: its signal aborts, it counts as a failure and the timer goes on
   * with its schedule. Default: no limit.
   */
  runTimeoutMs?: number;
}

/**
 * Runs `@timer` handlers per object: one schedule per (object, timer), never overlapping itself,
 * started when an object appears or starts matching and stopped when it is deleted, stops matching
 * or the operator stops. Errors never kill a timer: it runs again at the next tick (or sooner, after
 * a TemporaryError's delay).
 */
export class TimerEngine {
  private readonly objects = new Map<string, TimedObject>();
  /** Slots stopped on a filter mismatch whose run is still ending, by `uid/timer id`. */
  private readonly exiting = new Map<string, Promise<void>>();
  /** The invalid schedule annotation last reported per `uid/timer id`, so each gets one Event, not one per slot. */
  private readonly reported = new Map<string, string>();
  private readonly now: () => number;
  private readonly metrics: Metrics;
  private stopping = false;

  constructor(private readonly options: TimerEngineOptions) {
    this.now = options.now ?? Date.now;
    this.metrics = options.metrics ?? noMetrics;
  }

  /** Whether any timer applies to the object (then the framework finalizer holds it). */
  applies(body: KubeObject): boolean {
    return this.options.timers.some((spec) => matchesObject(body, spec.options));
  }

  /** Takes the newest state of an object: starts, reschedules or stops its timers. */
  observe(body: KubeObject): void {
    const uid = body.metadata?.uid;
    if (!uid || this.stopping) return;
    if (body.metadata?.deletionTimestamp) {
      void this.stopObject(uid);
      return;
    }
    const essence = JSON.stringify(essenceOf(body));
    let entry = this.objects.get(uid);
    const now = this.now();
    if (!entry) {
      entry = { body, essence, slots: new Map() };
      this.objects.set(uid, entry);
    }
    const changed = entry.essence !== essence;
    entry.body = body;
    entry.essence = essence;
    for (const spec of this.options.timers) {
      const slot = entry.slots.get(spec.id);
      const matches = matchesObject(body, spec.options);
      if (matches && !slot) {
        const created = this.createSlot(spec, body, now);
        created.previous = this.exiting.get(exitingKey(uid, spec.id));
        entry.slots.set(spec.id, created);
        this.schedule(uid, created);
      } else if (!matches && slot) {
        entry.slots.delete(spec.id);
        this.trackExit(uid, spec.id, this.stopSlot(slot));
      } else if (slot && changed) {
        // Every change restarts an idle wait (and may change a computed interval), and may be the fix a halted timer waits for.
        slot.state.lastChange = now;
        slot.halted = false;
        if (!slot.running) this.schedule(uid, slot);
      }
    }
    if (entry.slots.size === 0) this.objects.delete(uid);
  }

  /** Stops an object's timers (deleted, or gone) and waits for a run in progress. */
  async stopObject(uid: string): Promise<void> {
    const entry = this.objects.get(uid);
    this.objects.delete(uid);
    const stopping = [...(entry?.slots.values() ?? [])].map((slot) => this.stopSlot(slot));
    const exiting = [...this.exiting].filter(([key]) => key.startsWith(`${uid}/`)).map(([, done]) => done);
    for (const key of this.reported.keys()) if (key.startsWith(`${uid}/`)) this.reported.delete(key);
    await Promise.all([...stopping, ...exiting]);
  }

  /** Stops everything (operator shutdown, lost leadership). */
  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all([...[...this.objects.keys()].map((uid) => this.stopObject(uid)), ...this.exiting.values()]);
  }

  /** Objects with at least one timer. */
  get size(): number {
    return this.objects.size;
  }

  /** Remembers a stopping slot until its run has ended, so a new slot for the same timer can wait for it. */
  private trackExit(uid: string, timerId: string, done: Promise<void>): void {
    const key = exitingKey(uid, timerId);
    const tracked = done.catch(() => undefined).finally(() => {
      if (this.exiting.get(key) === tracked) this.exiting.delete(key);
    });
    this.exiting.set(key, tracked);
  }

  private createSlot(spec: TimerSpec, body: KubeObject, now: number): TimerSlot {
    const state: TimerState = { firstSeen: now, lastChange: now };
    const raw = body.metadata?.annotations?.[timerKey(spec.id)];
    let settings: { schedule: TimerSchedule; persists: boolean } | undefined;
    try {
      settings = this.persists(spec, body);
    } catch {
      settings = undefined; // a bad interval: schedule() reports it
    }
    if (raw !== undefined && settings?.persists) {
      const reading = readTimerRecord(raw, now, settings.schedule.intervalMs ?? 0);
      if (reading.ok) {
        const { record } = reading;
        state.lastStart = record.lastStart;
        state.lastEnd = record.lastEnd;
        state.lastPlanned = record.lastPlanned;
        state.gridAnchor = record.grid;
        state.lastChange = Math.min(now, record.lastStart); // a restart is not a change
        if (reading.clamped) this.reportInvalid(body, spec.id, raw, `${reading.clamped}, so the timer is not suspended`);
      } else {
        this.reportInvalid(body, spec.id, raw, `${reading.problem}; ignored, the timer starts its schedule over`);
      }
    }
    const logger = this.options.logger.child({ namespace: body.metadata?.namespace, name: body.metadata?.name, handler: spec.id });
    return { spec, logger, state, failures: 0, abort: new AbortController(), stopped: false };
  }

  /** Logs a forged or corrupt schedule annotation, and posts one Warning Event per annotation value. */
  private reportInvalid(body: KubeObject, timerId: string, raw: string, what: string): void {
    const meta = body.metadata ?? {};
    const key = exitingKey(meta.uid ?? '', timerId);
    const message = `annotation ${timerKey(timerId)} on ${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}: ${what}`;
    this.options.logger.warn({ namespace: meta.namespace, name: meta.name, timer: timerId }, message);
    if (this.reported.get(key) === raw) return;
    this.reported.set(key, raw);
    this.options.poster.post(body, 'Warning', INVALID_ANNOTATION, message);
  }

  /** The schedule and whether it is persisted, for one state of the object; throws on a bad interval. */
  private persists(spec: TimerSpec, body: KubeObject): { schedule: TimerSchedule; persists: boolean } {
    const { interval, initialDelay, idle, sharp, persistThreshold } = spec.options;
    const intervalValue = typeof interval === 'function' ? interval(body) : interval;
    const schedule: TimerSchedule = {
      intervalMs: intervalValue === undefined ? undefined : toMilliseconds(intervalValue, `timer ${spec.id} interval`),
      initialDelayMs: initialDelay === undefined ? undefined : toMilliseconds(initialDelay),
      idleMs: idle === undefined ? undefined : toMilliseconds(idle),
      sharp,
    };
    const threshold = persistThreshold === undefined ? DEFAULT_PERSIST_THRESHOLD_MS : toMilliseconds(persistThreshold);
    return { schedule, persists: schedule.intervalMs !== undefined && schedule.intervalMs >= threshold };
  }

  private settingsFor(slot: TimerSlot, body: KubeObject): { schedule: TimerSchedule; persists: boolean } {
    if (slot.cached?.body !== body) slot.cached = { body, ...this.persists(slot.spec, body) };
    return slot.cached;
  }

  private schedule(uid: string, slot: TimerSlot): void {
    slot.timeout?.clear();
    if (slot.stopped || slot.halted) return;
    const entry = this.objects.get(uid);
    if (!entry) return;
    let at: number | undefined;
    try {
      at = nextRunAt(this.settingsFor(slot, entry.body).schedule, slot.state);
    } catch (error) {
      // A bad computed interval (e.g. a malformed policy field) is the object's problem, not a crash.
      const meta = entry.body.metadata ?? {};
      this.options.logger.error({ namespace: meta.namespace, name: meta.name, timer: slot.spec.id }, describeError(error));
      this.options.poster.post(entry.body, 'Warning', 'TimerInvalid', `${slot.spec.id}: ${describeError(error)}`);
      return;
    }
    if (at === undefined) return;
    slot.plannedAt = at;
    // Never a bare setTimeout: a monthly interval is past its 24.8-day limit and would fire at once.
    slot.timeout = setLongTimeout(() => {
      // Never alongside the previous slot's run: it was asked to stop but may still be ending.
      const previous = slot.previous;
      slot.previous = undefined;
      const run = previous ? previous.then(() => this.run(uid, slot)) : this.run(uid, slot);
      slot.running = run.finally(() => {
        slot.running = undefined;
        this.schedule(uid, slot);
      });
    }, Math.max(0, at - this.now()));
  }

  private async run(uid: string, slot: TimerSlot): Promise<void> {
    const entry = this.objects.get(uid);
    if (!entry || slot.stopped) return;
    const body = entry.body;
    const start = this.now();
    if (slot.plannedAt !== undefined) {
      this.metrics.observe?.('timer_lateness_seconds', Math.max(0, start - slot.plannedAt) / 1000, { timer: slot.spec.id });
    }
    slot.state.lastStart = start;
    slot.state.lastPlanned = slot.plannedAt ?? start;
    slot.state.gridAnchor ??= slot.state.lastPlanned;
    slot.state.retryAt = undefined;
    const patch = emptyPatch();
    const logger = slot.logger;
    const context = (signal: AbortSignal): TimerContext => ({
      ...objectContext(body, logger, this.options.api.resource, this.options.api.client),
      patch,
      retry: slot.failures,
      signal,
    });
    let succeeded = false;
    const began = performance.now();
    try {
      await withTimeLimit((signal) => slot.spec.fn(context(signal)), this.options.runTimeoutMs, slot.abort.signal);
      succeeded = true;
      slot.failures = 0;
    } catch (thrown) {
      // `throw undefined` and `Promise.reject()` are failures too.
      const error = asError(thrown);
      slot.failures += 1;
      const message = describeError(error);
      if (error instanceof TemporaryError) slot.state.retryAt = this.now() + error.delay * 1000;
      if (error instanceof PermanentError) {
        slot.halted = true;
        const stopped = `${slot.spec.id} failed permanently and stops for this object until it changes or the operator restarts: ${message}`;
        logger.error({ err: message, failures: slot.failures }, `timer ${stopped}`);
        this.options.poster.post(body, 'Warning', 'TimerFailed', stopped);
      } else {
        logger.error({ err: message, failures: slot.failures }, `timer ${slot.spec.id} failed: ${message}`);
        this.options.poster.post(body, 'Warning', 'TimerFailed', `${slot.spec.id} failed: ${message}`);
      }
    }
    slot.state.lastEnd = this.now();
    this.metrics.observe?.('handler_duration_seconds', (performance.now() - began) / 1000, { handler: slot.spec.id });
    this.metrics.increment('handler_runs_total', { handler: slot.spec.id, result: succeeded ? 'success' : slot.halted ? 'failure' : 'retry' });
    if (slot.stopped) return;
    await this.write(body, slot, patch, succeeded).catch((error: unknown) => {
      if (error instanceof ApiError && error.status === 404) return; // deleted meanwhile
      logger.error({ err: describeError(error) }, `writing the result of timer ${slot.spec.id} failed`);
    });
  }

  /** The handler's patch, plus a long timer's schedule; nothing at all for a short timer that wrote nothing. */
  private async write(body: KubeObject, slot: TimerSlot, patch: Record<string, unknown>, succeeded: boolean): Promise<void> {
    const meta = body.metadata ?? {};
    const merged: Record<string, unknown> = {};
    mergeInto(merged, patch);
    const { schedule, persists } = this.settingsFor(slot, body);
    if (persists) {
      const previous = meta.annotations?.[timerKey(slot.spec.id)];
      const reading = previous === undefined ? undefined : readTimerRecord(previous, this.now(), schedule.intervalMs ?? 0);
      const kept = reading?.ok ? reading.record.lastSuccess : undefined;
      const lastSuccess = kept === undefined ? undefined : new Date(kept).toISOString();
      const record: PersistedTimer = {
        lastStart: new Date(slot.state.lastStart ?? this.now()).toISOString(),
        lastEnd: new Date(slot.state.lastEnd ?? this.now()).toISOString(),
        lastSuccess: succeeded ? new Date(slot.state.lastEnd ?? this.now()).toISOString() : lastSuccess,
      };
      if (schedule.sharp && slot.state.lastPlanned !== undefined && slot.state.gridAnchor !== undefined) {
        record.lastPlanned = new Date(slot.state.lastPlanned).toISOString();
        record.grid = new Date(slot.state.gridAnchor).toISOString();
      }
      mergeInto(merged, { metadata: { annotations: { [timerKey(slot.spec.id)]: JSON.stringify(record) } } });
    }
    await writePatch(this.options.api, meta.namespace, meta.name ?? '', merged);
  }

  private async stopSlot(slot: TimerSlot): Promise<void> {
    slot.stopped = true;
    slot.timeout?.clear();
    slot.abort.abort();
    await slot.running;
  }
}
