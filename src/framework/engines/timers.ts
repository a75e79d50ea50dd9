import { noTracing, type Tracing } from '../observability/tracing.js';
import type { ObjectApi } from '../api/object-api.js';
import { systemClock, type Clock } from '../clock/clock.js';
import type { TimerSpec } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import { essenceOf } from '../state/essence.js';
import { Identity } from '../state/identity.js';
import { ObjectMemos } from '../intents/memo.js';
import { ObjectWorkers } from './object-workers.js';
import { startTimer } from './timer-loop.js';
import { timerKey } from './timer-record.js';

/** The Event reason for a framework annotation that is not what the framework writes. */
const INVALID_ANNOTATION = 'InvalidAnnotation';

export interface TimerEngineOptions {
  api: ObjectApi;
  timers: readonly TimerSpec[];
  logger: Logger;
  poster: EventPoster;
  metrics?: Metrics;
  /** Traces each tick or iteration. Default: off. */
  tracing?: Tracing;
  /** What time it is and how to wait; default {@link systemClock}. */
  clock?: Clock;
  /** The time schedules read, when it should differ from `clock` (kept for older callers). Default: `clock.now`. */
  now?: () => number;
  /**
   * A run taking longer is abandoned: its signal aborts, it counts as a failure and the timer goes on
   * with its schedule. Default: no limit.
   */
  runTimeoutMs?: number;
  /** Whose annotations keep long timers' schedules, and whose bookkeeping is no change. Default: the default identity. */
  identity?: Identity;
  /** memo: the operator's per-object memos, for `ctx.memo` and `when` filters. Default: the engine's own. */
  memos?: ObjectMemos;
}

function clockOf(options: TimerEngineOptions): Clock {
  const clock = options.clock ?? systemClock;
  return options.now ? { ...clock, now: options.now } : clock;
}

/**
 * Runs `@timer` handlers per object: one schedule per (object, timer), never overlapping itself,
 * started when an object appears or starts matching and stopped when it is deleted, stops matching
 * or the operator stops. Errors never kill a timer: it runs again at the next tick (or sooner, after
 * a TemporaryError's delay).
 */
export class TimerEngine {
  private readonly workers: ObjectWorkers<TimerSpec>;
  /** The invalid schedule annotation last reported per `uid/timer id`, so each gets one Event, not one per worker. */
  private readonly reported = new Map<string, string>();
  /** The essence of the state being observed, computed once however many timers compare it. */
  private observed?: { body: KubeObject; essence: string };
  private readonly identity: Identity;

  constructor(private readonly options: TimerEngineOptions) {
    this.identity = options.identity ?? Identity.DEFAULT;
    const memos = options.memos ?? new ObjectMemos();
    const deps = {
      api: options.api,
      logger: options.logger,
      poster: options.poster,
      metrics: options.metrics ?? noMetrics,
      tracing: options.tracing ?? noTracing,
      clock: clockOf(options),
      runTimeoutMs: options.runTimeoutMs,
      identity: this.identity,
      memos,
      essence: (body: KubeObject) => this.essenceOf(body),
      warnRecord: (body: KubeObject, timerId: string, raw: string, what: string) =>
        this.warnRecord(body, timerId, raw, what),
    };
    this.workers = new ObjectWorkers({
      handlers: options.timers,
      scope: { resource: options.api.resource, memos },
      start: (seed) => startTimer(seed, deps),
      forget: (uid) => {
        for (const key of this.reported.keys())
          if (key.startsWith(`${uid}/`)) this.reported.delete(key);
      },
    });
  }

  /** Whether a timer holding a finalizer (`finalizer` not `false`) applies to the object: then the framework finalizer holds it. */
  applies(body: KubeObject): boolean {
    return this.workers.applies(body);
  }

  /** Takes the newest state of an object: starts, reschedules or stops its timers. */
  observe(body: KubeObject): void {
    this.observed = undefined; // a state is read afresh on every observation
    this.workers.observe(body);
    this.observed = undefined;
  }

  /** Stops an object's timers (deleted, or gone) and waits for a run in progress. */
  stopObject(uid: string): Promise<void> {
    return this.workers.stopObject(uid);
  }

  /** Stops everything (operator shutdown, lost leadership). */
  stopAll(): Promise<void> {
    return this.workers.stopAll();
  }

  /** Whether one of the object's timers was stopped but still runs (abandoned): see {@link ObjectWorkers.stillRunning}. */
  stillRunning(uid: string): boolean {
    return this.workers.stillRunning(uid);
  }

  /** Objects with at least one timer. */
  get size(): number {
    return this.workers.objectCount;
  }

  private essenceOf(body: KubeObject): string {
    if (this.observed?.body !== body)
      this.observed = { body, essence: JSON.stringify(essenceOf(body, [], this.identity)) };
    return this.observed.essence;
  }

  /** Logs a forged or corrupt schedule annotation, and posts one Warning Event per annotation value. */
  private warnRecord(body: KubeObject, timerId: string, raw: string, what: string): void {
    const meta = body.metadata ?? {};
    const key = `${meta.uid ?? ''}/${timerId}`;
    const message = `annotation ${timerKey(timerId, this.identity)} on ${meta.namespace ? `${meta.namespace}/` : ''}${meta.name ?? ''}: ${what}`;
    this.options.logger.warn(
      { namespace: meta.namespace, name: meta.name, timer: timerId },
      message,
    );
    if (this.reported.get(key) === raw) return;
    this.reported.set(key, raw);
    this.options.poster.post(body, 'Warning', INVALID_ANNOTATION, message);
  }
}
