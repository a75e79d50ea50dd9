// The reactor's contract: what a processing run receives and returns, its options and progress.
import type { Clock } from '../clock/clock.js';
import type { Logger } from '../observability/logger.js';
import type { Tracing } from '../observability/tracing.js';
import type { Metrics } from '../observability/metrics.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { ObjectEvent } from '../watching/watch-events.js';

/** What one processing run of an object receives. */
export interface ObjectBatch<T extends KubeObject, R> {
  uid: string;
  /** The newest event: the state the run should act on. */
  latest: ObjectEvent<T>;
  /** Every raw event since the previous run, oldest first (bounded by `maxEventsPerRun`). */
  events: readonly ObjectEvent<T>[];
  /** What the event was routed with (for example, the handlers of its resource). */
  route: R;
  /** Aborted when the reactor stops past its drain deadline. */
  signal: AbortSignal;
}

/**
 * A processor may ask to run the object again later even without a new event, and how urgently:
 * `high` goes before live changes, `low` waits with listings and relists; default as a live change.
 */
export type ProcessResult = void | {
  requeueAfterMs?: number;
  priority?: RunPriority;
  /** The re-run retries work that failed (counted in `reactor_objects_retrying`), not a periodic one. */
  retry?: boolean;
};

/** Where a run waits in the shared queue. */
export type RunPriority = 'high' | 'normal' | 'low';

export type ObjectProcessor<T extends KubeObject, R> = (
  batch: ObjectBatch<T, R>,
) => Promise<ProcessResult>;

/** Options for {@link Reactor}. */
export interface ReactorOptions {
  /**
   * At most this many objects are processed at once. Default 64: a run holds its slot through its
   * API writes, so at 100 changes/s with ~150 ms of writes each, 16 slots queue and 64 do not.
   */
  concurrency?: number;
  /** Raw events kept per object between runs; older ones are dropped (their state is superseded). Default 1,000. */
  maxEventsPerRun?: number;
  logger?: Logger;
  metrics?: Metrics;
  /** Traces each run that does something (a handler attempt, an API request). Default: off. */
  tracing?: Tracing;
  /** The clock for requeues, the drain deadline and progress tracking ({@link Reactor.progress}). Default {@link systemClock}. */
  clock?: Clock;
  /** The time progress tracking reads, when it should differ from `clock` (kept for older callers). Default: `clock.now`. */
  now?: () => number;
  /**
   * Objects of a stream's initial listing that start before the listing is complete; the rest wait
   * for it. Default 1,000. A watch starts from the listing's resourceVersion, so every write made
   * while listing is an event the API server replays to it first; a replay of tens of thousands
   * with live events arriving gets the watch closed as unresponsive, again and again, and the
   * operator falls behind its own writes (measured: 47 s behind a plain watch at 100,000 objects).
   */
  maxRunsWhileListing?: number;
}

/** Whether the reactor's runs are moving: what `/healthz` needs to spot a hung handler. */
export interface ReactorProgress {
  /** Runs waiting for a free slot. */
  queued: number;
  /** Runs in progress. */
  running: number;
  /** When a run last finished (or the reactor was created), epoch ms. */
  lastCompletedAt: number;
  /** Since when runs have been waiting for a slot without a break, epoch ms; undefined when none wait. */
  waitingSince?: number;
}

/**
 * How long work has waited with no run finishing, in ms; 0 when nothing waits. Work that has only just
 * started waiting is not a stall, however long ago the last run finished (an idle operator is healthy).
 */
export function stalledForMs(progress: ReactorProgress, now: number): number {
  if (progress.queued === 0 || progress.waitingSince === undefined) return 0;
  return Math.max(0, now - Math.max(progress.lastCompletedAt, progress.waitingSince));
}
