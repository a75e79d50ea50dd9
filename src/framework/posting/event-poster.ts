import { currentTraceId, detached } from '../observability/tracing.js';
import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import { EVENTS, namespacedCollectionPath, objectPath } from '../api/resource.js';
import { systemClock, type Clock } from '../clock/clock.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import {
  EventCorrelator,
  TRACE_ID_ANNOTATION,
  type EventCorrelatorOptions,
  type EventRecord,
} from './event-correlator.js';
import type { EventSink, EventType, InvolvedObject } from './event-types.js';

export type { EventSink, EventType, InvolvedObject } from './event-types.js';

/** Options of an {@link EventPoster}. */
export interface EventPosterOptions extends EventCorrelatorOptions {
  /** Writes waiting at most; past it new Events are dropped and counted. Default 1000 (about 1.3 KB each). */
  maxQueued?: number;
  /** Where `konductor_events_dropped_total` is counted. */
  metrics?: Metrics;
  clock?: Clock;
  /** How long one write may take before it is given up. Default 10 s. */
  writeTimeoutMs?: number;
}

/** Why an Event was not written, as the `reason` label of `events_dropped_total`. */
type DropReason = 'rate_limited' | 'queue_full' | 'stopped';

const MAX_MESSAGE = 1024;
/** A drop this long after the previous one starts a new burst, with a new log line. */
const DROP_BURST_GAP_MS = 60_000;

function clip(message: string): string {
  if (message.length <= MAX_MESSAGE) return message;
  const half = (MAX_MESSAGE - 3) / 2;
  return `${message.slice(0, Math.floor(half))}...${message.slice(-Math.ceil(half))}`;
}

function timestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Posts core/v1 Events about objects from a bounded background queue, so handlers never wait for
 * them, as client-go's recorder does: an Event identical to one already posted (same object, type,
 * reason, message) updates that Event's `count` and `lastTimestamp` instead of creating another;
 * many different messages of one object and reason become one combined Event; each object gets a
 * burst of 25 writes, then one per 5 minutes; and at most `maxQueued` writes wait. What is held back
 * is counted in `konductor_events_dropped_total` and logged once per burst of drops. A failure to
 * post is logged and dropped, never thrown. `component` is the Events' `source.component`.
 */
export class EventPoster implements EventSink {
  private readonly correlator: EventCorrelator;
  /** Records with a write due, oldest first; a repeat only changes its record's count. */
  private readonly queue = new Set<EventRecord>();
  private readonly maxQueued: number;
  private readonly metrics: Metrics;
  private readonly clock: Clock;
  private readonly writeTimeoutMs: number;
  private writing: AbortController | undefined;
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => undefined;
  private lastDropAt = -Infinity;
  private droppedInBurst = 0;

  constructor(
    private readonly client: ApiClient,
    private readonly logger: Logger = silentLogger(),
    private readonly component = 'konductor',
    options: EventPosterOptions = {},
  ) {
    this.correlator = new EventCorrelator(options);
    this.maxQueued = options.maxQueued ?? 1000;
    this.metrics = options.metrics ?? noMetrics;
    this.clock = options.clock ?? systemClock;
    this.writeTimeoutMs = options.writeTimeoutMs ?? 10_000;
  }

  post(object: InvolvedObject, type: EventType, reason: string, message: string): void {
    const now = this.clock.now();
    const { action, record } = this.correlator.correlate(object, type, reason, clip(message), now);
    record.traceId = currentTraceId() ?? record.traceId;
    if (action === 'queued') return;
    if (action === 'rate-limited') {
      this.drop('rate_limited', 1, now);
      return;
    }
    if (this.queue.size >= this.maxQueued) {
      this.drop('queue_full', 1, now);
      return;
    }
    record.queued = true;
    this.queue.add(record);
    // The drain outlives the run that posted first; each record carries its own trace id.
    if (!this.writing) void detached(() => this.drain());
  }

  /**
   * Resolves when every queued Event has been written (or given up), or once `deadlineMs` has passed:
   * then the writes still waiting are dropped, counted (`reason="stopped"`) and logged in one line.
   */
  async flush(deadlineMs = Infinity): Promise<void> {
    if (!this.writing) return;
    const timeUp = new AbortController();
    const done = this.idle.then(() => timeUp.abort());
    await Promise.race([done, this.clock.sleep(deadlineMs, timeUp.signal)]);
    if (!this.writing) return;
    const unwritten = this.queue.size + 1;
    for (const record of this.queue) record.queued = false;
    this.queue.clear();
    this.writing.abort();
    this.metrics.increment('events_dropped_total', { reason: 'stopped' }, unwritten);
    this.logger.warn(
      { unwritten, deadlineMs },
      `${unwritten} Events were not written: the stop deadline came first`,
    );
    await this.idle;
  }

  /** Writes waiting or in progress. */
  get queued(): number {
    return this.queue.size + (this.writing ? 1 : 0);
  }

  private async drain(): Promise<void> {
    this.idle = new Promise((resolve) => (this.markIdle = resolve));
    try {
      for (let next = this.first(); next; next = this.first()) {
        this.queue.delete(next);
        next.queued = false;
        this.writing = new AbortController();
        const signal = this.writing.signal;
        await this.write(next, signal).catch((error: unknown) => {
          if (signal.aborted) return; // counted by flush
          const meta = next.object.metadata ?? {};
          this.logger.warn(
            {
              err: error instanceof Error ? error.message : String(error),
              reason: next.reason,
              name: meta.name,
              namespace: meta.namespace,
            },
            'could not post an Event',
          );
        });
      }
    } finally {
      // Cleared in the same turn as the empty queue was seen, so a post after it starts a new drain.
      this.writing = undefined;
      this.markIdle();
    }
  }

  private first(): EventRecord | undefined {
    return this.queue.values().next().value;
  }

  /** A count update of the Event already posted; a create when there is none (or it expired). */
  private async write(record: EventRecord, signal: AbortSignal): Promise<void> {
    const namespace = record.object.metadata?.namespace || 'default'; // where a cluster-scoped object's go
    const init = { signal, timeoutMs: this.writeTimeoutMs };
    if (record.name !== undefined) {
      const update = {
        count: record.count,
        lastTimestamp: timestamp(record.lastTimestamp),
        message: record.message,
        ...(record.traceId ? { metadata: traceAnnotation(record.traceId) } : {}),
      };
      try {
        await this.client.request('PATCH', objectPath(EVENTS, namespace, record.name), {
          ...init,
          body: update,
          contentType: 'application/merge-patch+json',
        });
        return;
      } catch (error) {
        if (!ApiError.isNotFound(error)) throw error;
        record.name = undefined;
      }
    }
    const created = await this.client.request<{ metadata?: { name?: string } } | undefined>(
      'POST',
      namespacedCollectionPath(EVENTS, namespace),
      { ...init, body: this.body(record, namespace) },
    );
    record.name = created?.metadata?.name;
  }

  private body(record: EventRecord, namespace: string): Record<string, unknown> {
    const { object, type, reason, message, count } = record;
    const meta = object.metadata ?? {};
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: {
        generateName: `${meta.name ?? 'object'}.`,
        namespace,
        ...(record.traceId ? traceAnnotation(record.traceId) : {}),
      },
      involvedObject: {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
      },
      type,
      reason,
      message,
      source: { component: this.component },
      firstTimestamp: timestamp(record.firstTimestamp),
      lastTimestamp: timestamp(record.lastTimestamp),
      count,
    };
  }

  /** Counts a dropped Event; logs one line when a burst of drops starts, not one per drop. */
  private drop(reason: DropReason, count: number, now: number): void {
    this.metrics.increment('events_dropped_total', { reason }, count);
    const quiet = now - this.lastDropAt >= DROP_BURST_GAP_MS;
    this.lastDropAt = now;
    if (!quiet) {
      this.droppedInBurst += count;
      return;
    }
    const before = this.droppedInBurst;
    this.droppedInBurst = count;
    this.logger.warn(
      { reason, droppedInPreviousBurst: before },
      `Events are being dropped (${reason === 'rate_limited' ? 'an object is over its Event rate limit' : `${this.maxQueued} writes are already waiting`}); further drops are only counted in konductor_events_dropped_total until a minute passes without one`,
    );
  }
}

function traceAnnotation(traceId: string): { annotations: Record<string, string> } {
  return { annotations: { [TRACE_ID_ANNOTATION]: traceId } };
}
