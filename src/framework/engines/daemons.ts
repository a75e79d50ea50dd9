import { noTracing, type Tracing } from '../observability/tracing.js';
import type { ApiClient } from '../api/api-client.js';
import type { Resource } from '../api/resource.js';
import { systemClock, type Clock } from '../clock/clock.js';
import type { DaemonSpec } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import { startDaemon } from './daemon-loop.js';
import { ObjectMemos } from '../intents/memo.js';
import { ObjectWorkers } from './object-workers.js';

export interface DaemonEngineOptions {
  resource: Resource;
  client: ApiClient;
  daemons: readonly DaemonSpec[];
  logger: Logger;
  poster: EventPoster;
  metrics?: Metrics;
  /** Traces each tick or iteration. Default: off. */
  tracing?: Tracing;
  /** How to wait (backoffs, cancellation); default {@link systemClock}. */
  clock?: Clock;
  /** memo: the operator's per-object memos, for `ctx.memo` and `when` filters. Default: the engine's own. */
  memos?: ObjectMemos;
}

/**
 * Runs `@daemon` handlers: one long-lived task per (object, daemon), started when an object appears
 * or starts matching and stopped when it is deleted, stops matching or the operator stops. A daemon
 * that returns stays ended; one that throws is restarted with backoff (or after a TemporaryError's
 * delay), except on a PermanentError, which ends it for this process. Stopping resolves `stopped` at
 * once, aborts `signal` after `cancellationBackoff`, and waits up to `cancellationTimeout` for the
 * task to end before abandoning it with a warning.
 */
export class DaemonEngine {
  private readonly workers: ObjectWorkers<DaemonSpec>;

  constructor(options: DaemonEngineOptions) {
    const deps = {
      resource: options.resource,
      client: options.client,
      logger: options.logger,
      poster: options.poster,
      metrics: options.metrics ?? noMetrics,
      tracing: options.tracing ?? noTracing,
      clock: options.clock ?? systemClock,
      memos: options.memos ?? new ObjectMemos(),
    };
    const scope = { resource: options.resource, memos: deps.memos };
    this.workers = new ObjectWorkers({
      handlers: options.daemons,
      scope,
      start: (seed) => startDaemon(seed, deps),
    });
  }

  /** Whether a daemon holding a finalizer (`finalizer` not `false`) applies to the object: then the framework finalizer holds it. */
  applies(body: KubeObject): boolean {
    return this.workers.applies(body);
  }

  /** Takes the newest state: starts daemons for matching objects, stops those that no longer match. */
  observe(body: KubeObject): void {
    this.workers.observe(body);
  }

  /** Stops an object's daemons; resolves once they exited or were abandoned. */
  stopObject(uid: string): Promise<void> {
    return this.workers.stopObject(uid);
  }

  /** Stops every daemon (operator shutdown, lost leadership). */
  stopAll(): Promise<void> {
    return this.workers.stopAll();
  }

  /** Whether one of the object's daemons was stopped but still runs (abandoned): see {@link ObjectWorkers.stillRunning}. */
  stillRunning(uid: string): boolean {
    return this.workers.stillRunning(uid);
  }

  /** Daemons currently running (not finished). */
  get running(): number {
    return this.workers.activeCount;
  }
}
