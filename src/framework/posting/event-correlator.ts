import { LruMap } from './lru-map.js';
import { SpamFilter, type SpamFilterOptions } from './spam-filter.js';
import type { EventType, InvolvedObject } from './event-types.js';

/** Settings of an {@link EventCorrelator}; the defaults are client-go's. */
export interface EventCorrelatorOptions {
  /** Events remembered for de-duplication (and similar-Event groups for aggregation). Default 4096. */
  cacheSize?: number;
  /** From this many different messages of one object, type and reason within `aggregateWindowMs` on, they share one Event. Default 10. */
  aggregateMaxEvents?: number;
  /** How long a group of similar Events stays open after its last one. Default 600 000 (10 minutes). */
  aggregateWindowMs?: number;
  /** The per-object rate limit. */
  rateLimit?: SpamFilterOptions;
}

/** One Event as posted (or about to be): what a repeat updates instead of creating another. */
export interface EventRecord {
  readonly object: InvolvedObject;
  readonly type: EventType;
  readonly reason: string;
  message: string;
  /** How often it happened, including occurrences whose write the rate limit held back. */
  count: number;
  /** Epoch ms. */
  firstTimestamp: number;
  /** Epoch ms. */
  lastTimestamp: number;
  /** The Event object's name once created; a repeat then updates that object. */
  name?: string;
  /** A write of this record waits in the queue: a repeat rides along with it. */
  queued: boolean;
  /** The trace of the work that posted it last, if traced: written as {@link TRACE_ID_ANNOTATION}. */
  traceId?: string;
}

/** The Event annotation holding the id of the trace whose work posted it. */
export const TRACE_ID_ANNOTATION = 'konductor.dev/trace-id';

/**
 * What to do with one occurrence: `write` it (queue a create, or a count update when `record.name`
 * is known); nothing more when its write is already `queued`; or nothing because the object is over
 * its `rate-limited` budget (the count still grows and goes out with the next write).
 */
export type Correlation = { action: 'write' | 'queued' | 'rate-limited'; record: EventRecord };

/** Prefix of an Event standing for several similar ones, as client-go's. */
export const COMBINED_PREFIX = '(combined from similar events): ';

interface Aggregate {
  messages: Set<string>;
  last: number;
}

/**
 * client-go's EventCorrelator, minus the I/O: folds an identical Event (same involved object, type,
 * reason and message) into a count update of the one already posted, merges an object's flood of
 * different messages for one reason into a single combined Event, and rate-limits writes per object.
 * Every table is an LRU of bounded size. Pure: the caller passes the time.
 */
export class EventCorrelator {
  private readonly records: LruMap<string, EventRecord>;
  private readonly aggregates: LruMap<string, Aggregate>;
  private readonly spam: SpamFilter;
  private readonly maxEvents: number;
  private readonly windowMs: number;

  constructor(options: EventCorrelatorOptions = {}) {
    const size = options.cacheSize ?? 4096;
    this.records = new LruMap(size);
    this.aggregates = new LruMap(size);
    this.spam = new SpamFilter({ maxObjects: size, ...options.rateLimit });
    this.maxEvents = options.aggregateMaxEvents ?? 10;
    this.windowMs = options.aggregateWindowMs ?? 600_000;
  }

  /** Records one occurrence at `now` (epoch ms) and says whether a write is due. `message` is already clipped. */
  correlate(
    object: InvolvedObject,
    type: EventType,
    reason: string,
    message: string,
    now: number,
  ): Correlation {
    const objectKey = keyOfObject(object);
    const similarKey = JSON.stringify([objectKey, type, reason]);
    const combined = this.aggregate(similarKey, message, now);
    const key = combined ? similarKey : JSON.stringify([objectKey, type, reason, message]);
    const shown = combined ? `${COMBINED_PREFIX}${message}` : message;
    let record = this.records.get(key);
    if (record) {
      record.count += 1;
      record.lastTimestamp = now;
      record.message = shown;
    } else {
      record = {
        object,
        type,
        reason,
        message: shown,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        queued: false,
      };
      this.records.set(key, record);
    }
    if (record.queued) return { action: 'queued', record };
    return { action: this.spam.allow(objectKey, now) ? 'write' : 'rate-limited', record };
  }

  /** Whether this message joins the object's combined Event for the reason (client-go's EventAggregator). */
  private aggregate(similarKey: string, message: string, now: number): boolean {
    let aggregate = this.aggregates.get(similarKey);
    // The window slides, as client-go's: it closes after `windowMs` without a similar Event.
    if (!aggregate || now - aggregate.last > this.windowMs)
      aggregate = { messages: new Set(), last: now };
    aggregate.last = now;
    this.aggregates.set(similarKey, aggregate);
    // Past the limit the set stops growing: every message then combines, so it stays bounded.
    if (aggregate.messages.size < this.maxEvents) aggregate.messages.add(message);
    return aggregate.messages.size >= this.maxEvents;
  }
}

/** The object an Event is about: its uid when it has one, else its kind, namespace and name. */
function keyOfObject(object: InvolvedObject): string {
  const meta = object.metadata ?? {};
  return meta.uid
    ? `uid:${meta.uid}`
    : JSON.stringify([object.apiVersion, object.kind, meta.namespace ?? '', meta.name ?? '']);
}
