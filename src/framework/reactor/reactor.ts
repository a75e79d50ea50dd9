import type { Link } from '@opentelemetry/api';
import { setMaxListeners } from 'node:events';
import type { Observable, Subscription } from 'rxjs';
import { systemClock, type Clock } from '../clock/clock.js';
import type { LongTimeout } from '../clock/long-timeout.js';
import { NO_EVENTS, newSlot, type Slot } from './object-slot.js';
import { addLink, beginRunTrace, endRunTrace } from './run-trace.js';
import { noTracing, type Tracing } from '../observability/tracing.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { ObjectEvent, WatchEvent } from '../watching/watch-events.js';
import { RunQueue } from './run-queue.js';

import type {
  ObjectProcessor,
  ProcessResult,
  ReactorOptions,
  ReactorProgress,
  RunPriority,
} from './reactor-contract.js';

export {
  stalledForMs,
  type ObjectBatch,
  type ObjectProcessor,
  type ProcessResult,
  type ReactorOptions,
  type ReactorProgress,
  type RunPriority,
} from './reactor-contract.js';

/** Priorities in the shared queue: live changes go before a (re)listing backlog; a processor may ask for more. */
const HIGH = 2;
const LIVE = 1;
const BACKLOG = 0;
const PRIORITIES: Record<RunPriority, number> = { high: HIGH, normal: LIVE, low: BACKLOG };

/**
 * Feeds each object's events to a processor one run at a time.
 *
 * - Events are grouped by object UID; one object is never processed twice at once.
 * - Events arriving while an object waits or runs coalesce: the next run sees only the newest state
 *   (plus the raw events, for handlers that want every one).
 * - A global limit bounds concurrent runs. Objects from a (re)listing wait behind live changes, so a
 *   backlog of thousands never starves a newly created object; a re-run goes to the back of the line.
 * - State is kept only for objects with work pending or running; it is freed as soon as they are idle.
 */
export class Reactor<T extends KubeObject = KubeObject, R = undefined> {
  private readonly slots = new Map<string, Slot<T, R>>();
  private readonly queue = new RunQueue<Slot<T, R>>();
  private readonly concurrency: number;
  private pending = 0;
  private retrying = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly abort = new AbortController();
  private readonly subscriptions: Subscription[] = [];
  private readonly logger: Logger;
  private readonly metrics: Metrics;
  private readonly tracing: Tracing;
  private readonly maxEventsPerRun: number;
  private readonly maxRunsWhileListing: number;
  private readonly clock: Clock;
  private readonly now: () => number;
  private lastCompletedAt: number;
  private waitingSince: number | undefined;
  private stopped = false;

  constructor(
    private readonly processor: ObjectProcessor<T, R>,
    options: ReactorOptions = {},
  ) {
    this.concurrency = Math.max(1, options.concurrency ?? 64);
    // Every run in progress listens on this one signal (and stops listening when it ends), so Node's
    // default warning at 10 listeners would fire at any concurrency above 10.
    setMaxListeners(0, this.abort.signal);
    this.logger = options.logger ?? silentLogger();
    this.metrics = options.metrics ?? noMetrics;
    this.tracing = options.tracing ?? noTracing;
    this.maxEventsPerRun = options.maxEventsPerRun ?? 1_000;
    this.maxRunsWhileListing = Math.max(0, options.maxRunsWhileListing ?? 1_000);
    this.clock = options.clock ?? systemClock;
    this.now = options.now ?? (() => this.clock.now());
    this.lastCompletedAt = this.now();
  }

  /**
   * Feeds a watch stream into the reactor; SYNCED markers go to `onSynced`. A stream that fails (it
   * never does for API errors, which it retries; it does when the heap cannot hold its listing, with a
   * `MemoryBudgetError`) is logged, and given to `onError` so the operator can stop and say why.
   */
  consume(
    events: Observable<WatchEvent<T>>,
    route: R,
    onSynced?: () => void,
    onError?: (error: unknown) => void,
  ): Subscription {
    // Until the first SYNCED: listed objects beyond the head start wait here, in listing order.
    let listing = true;
    let started = 0;
    let held: ObjectEvent<T>[] = [];
    const listed = (): void => {
      listing = false;
      const waiting = held;
      held = [];
      for (const event of waiting) this.push(event, route);
      onSynced?.();
    };
    const take = (event: ObjectEvent<T>): void => {
      if (listing && event.fromList && started >= this.maxRunsWhileListing) held.push(event);
      else {
        if (listing && event.fromList) started += 1;
        this.push(event, route);
      }
    };
    const subscription = events.subscribe({
      next: (event) =>
        event.type === 'SYNCED' ? (listing ? listed() : onSynced?.()) : take(event),
      error: (error: unknown) => {
        this.logger.error(
          { err: error },
          error instanceof Error ? `watch stream failed: ${error.message}` : 'watch stream failed',
        );
        onError?.(error);
      },
    });
    this.subscriptions.push(subscription);
    return subscription;
  }

  /** Adds one event for its object. */
  push(event: ObjectEvent<T>, route: R): void {
    if (this.stopped) return;
    const uid = event.object.metadata?.uid;
    if (!uid) return;
    const slot = this.slotOf(uid, event, route);
    if (slot.events.length >= this.maxEventsPerRun) slot.events.shift();
    if (slot.events.length > 0 || slot.state === 'running')
      this.metrics.increment('reactor_coalesced_events_total');
    // A one-element array for the usual single event: an empty array grown by push reserves 17 slots.
    if (slot.events.length === 0) slot.events = [event];
    else slot.events.push(event);
    slot.latest = event;
    slot.route = route;
    if (slot.requeueTimer) {
      // A real event beats a scheduled re-run: the earliest wins, and no duplicate run follows.
      slot.requeueTimer.clear();
      slot.requeueTimer = undefined;
    }
    const priority = event.fromList ? BACKLOG : LIVE;
    if (slot.state === 'idle') this.schedule(slot, priority);
    else if (slot.state === 'queued' && priority > slot.priority) {
      slot.priority = priority;
      this.queue.add(slot, priority);
    }
    this.report();
  }

  /** Objects with work queued or running. */
  get activeObjects(): number {
    return this.slots.size;
  }

  /** Runs waiting for a free slot. */
  get queued(): number {
    return this.queue.size;
  }

  /** Runs in progress. */
  get running(): number {
    return this.pending;
  }

  /** Queue depth and when runs last finished, for spotting hung handlers. */
  progress(): ReactorProgress {
    return {
      queued: this.queue.size,
      running: this.pending,
      lastCompletedAt: this.lastCompletedAt,
      waitingSince: this.waitingSince,
    };
  }

  /** Resolves when nothing is queued or running. */
  onIdle(): Promise<void> {
    if (this.queue.size === 0 && this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking events, drops runs not yet started, and waits for runs in progress up to
   * `deadlineMs`; past it, their signal is aborted and the reactor gives up waiting.
   */
  async stop(deadlineMs = 30_000): Promise<void> {
    this.stopped = true;
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    this.queue.clear();
    this.wakeIfIdle();
    for (const slot of this.slots.values()) {
      slot.requeueTimer?.clear();
      this.markRetrying(slot, false);
    }
    let timer: LongTimeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = this.clock.setTimeout(() => resolve('timeout'), deadlineMs);
    });
    const outcome = await Promise.race([this.onIdle().then(() => 'drained' as const), deadline]);
    timer?.clear();
    if (outcome === 'timeout') {
      this.logger.warn(
        { running: this.pending, deadlineMs },
        'runs still in progress at the drain deadline; aborting them',
      );
      this.abort.abort();
    }
    this.slots.clear();
    this.report();
  }

  /**
   * Runs the object once more without adding a raw event (event observers see nothing): for work the
   * route keeps itself, such as an owner's child changes. Coalesces like {@link push}: a run already
   * queued takes it along, a run in progress is followed by one more. `current` is the object's state
   * for a run when it has no work pending (its newest watched state); pending work keeps its own.
   */
  wake(current: ObjectEvent<T>, route: R, link?: Link): void {
    if (this.stopped) return;
    const uid = current.object.metadata?.uid;
    if (!uid) return;
    const slot = this.slotOf(uid, current, route);
    slot.route = route;
    if (link) addLink(slot, link);
    if (slot.state === 'running') {
      slot.woken = true;
      return;
    }
    if (slot.requeueTimer) {
      slot.requeueTimer.clear();
      slot.requeueTimer = undefined;
    }
    const priority = current.fromList ? BACKLOG : LIVE;
    if (slot.state === 'idle') this.schedule(slot, priority);
    else if (priority > slot.priority) {
      slot.priority = priority;
      this.queue.add(slot, priority);
    }
    this.report();
  }

  private slotOf(uid: string, latest: ObjectEvent<T>, route: R): Slot<T, R> {
    let slot = this.slots.get(uid);
    if (!slot) this.slots.set(uid, (slot = newSlot(uid, latest, route, BACKLOG)));
    return slot;
  }

  private schedule(slot: Slot<T, R>, priority: number): void {
    slot.queuedAt = performance.now();
    slot.state = 'queued';
    slot.priority = priority;
    this.queue.add(slot, priority);
    this.startRuns();
  }

  /** Starts queued runs while slots are free. */
  private startRuns(): void {
    while (this.pending < this.concurrency && !this.stopped) {
      const slot = this.queue.take();
      if (!slot) break;
      this.pending += 1;
      void this.run(slot)
        .catch((error: unknown) =>
          this.logger.error({ err: error }, 'reactor run failed unexpectedly'),
        )
        .then(() => {
          this.pending -= 1;
          this.startRuns();
          // The run's own report() came before it counted as finished: report again, or reactor_running
          // stays at the last run's count while the reactor is idle.
          this.report();
          this.wakeIfIdle();
        });
    }
  }

  private wakeIfIdle(): void {
    if (this.pending === 0 && this.queue.size === 0)
      for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private async run(slot: Slot<T, R>): Promise<void> {
    if (this.stopped) return;
    this.metrics.observe?.(
      'reactor_queue_wait_seconds',
      (performance.now() - slot.queuedAt) / 1000,
    );
    this.markRetrying(slot, false);
    slot.state = 'running';
    slot.woken = false;
    const events = slot.events;
    slot.events = NO_EVENTS;
    const latest = slot.latest;
    this.report();
    let result: ProcessResult = undefined;
    const traced = beginRunTrace(this.tracing, slot, events.length);
    let failure: unknown;
    try {
      this.metrics.increment('reactor_runs_total');
      const batch = { uid: slot.uid, latest, events, route: slot.route, signal: this.abort.signal };
      result = await (traced ? traced.within(() => this.processor(batch)) : this.processor(batch));
    } catch (error) {
      failure = error;
      // Processors handle their own errors; anything escaping is a framework bug, logged, never fatal.
      const meta = latest.object.metadata;
      this.logger.error(
        { err: error, namespace: meta?.namespace, name: meta?.name },
        'object processing failed unexpectedly',
      );
    }
    endRunTrace(slot, traced, result, failure);
    this.lastCompletedAt = this.now();
    if (this.stopped) return;
    if (slot.events.length > 0 || slot.woken) {
      // More happened meanwhile: run again, at the back of the line so others get their turn.
      this.schedule(slot, slot.woken || slot.events.some((e) => !e.fromList) ? LIVE : BACKLOG);
      slot.woken = false;
    } else if (result?.requeueAfterMs !== undefined && slot.latest.type !== 'DELETED') {
      slot.state = 'idle';
      this.markRetrying(slot, result.retry === true);
      const priority = PRIORITIES[result.priority ?? 'normal'] ?? LIVE;
      // A requeue can be far off (a TemporaryError delay, a stored `delayed` time): past setTimeout's
      // 24.8-day limit a bare setTimeout would fire at once, again and again; the clock's does not.
      slot.requeueTimer = this.clock.setTimeout(
        () => {
          slot.requeueTimer = undefined;
          if (slot.state === 'idle' && !this.stopped) {
            // No raw event is added: nothing happened to the object, so event observers see nothing twice.
            this.schedule(slot, priority);
            // Nothing else reports here: without it the queue depth misses a re-run waiting for a slot.
            this.report();
          }
        },
        Math.max(0, result.requeueAfterMs),
      );
    } else {
      slot.state = 'idle';
      this.slots.delete(slot.uid);
    }
    this.report();
  }

  private markRetrying(slot: Slot<T, R>, retrying: boolean): void {
    if (slot.retrying === retrying) return;
    slot.retrying = retrying;
    this.retrying += retrying ? 1 : -1;
    this.metrics.set('reactor_objects_retrying', this.retrying);
  }

  private report(): void {
    if (this.queue.size === 0) this.waitingSince = undefined;
    else this.waitingSince ??= this.now();
    this.metrics.set('reactor_queue_depth', this.queue.size);
    this.metrics.set('reactor_running', this.pending);
    this.metrics.set('reactor_objects', this.slots.size);
  }
}
