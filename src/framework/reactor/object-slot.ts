import type { Link, SpanContext } from '@opentelemetry/api';
import type { LongTimeout } from '../clock/long-timeout.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { ObjectEvent } from '../watching/watch-events.js';
import type { QueueTicket } from './run-queue.js';

/** One object's pending work in the reactor; it exists only while the object has work queued, running or requeued. */
export interface Slot<T extends KubeObject, R> extends QueueTicket {
  uid: string;
  state: 'idle' | 'queued' | 'running';
  priority: number;
  events: ObjectEvent<T>[];
  latest: ObjectEvent<T>;
  route: R;
  requeueTimer: LongTimeout | undefined;
  /** Woken while running (an owned child changed): it runs again though no raw event came. */
  woken: boolean;
  /** When it was last queued, by `performance.now()`. */
  queuedAt: number;
  /** Its requeue retries a failure. */
  retrying: boolean;
  /** Tracing: the run a retry continues, and how many runs that trace already has. */
  trace: SpanContext | undefined;
  traceRuns: number;
  /** Tracing: why it was woken (the child events), for its next run's root span. */
  links: Link[] | undefined;
}

/** Shared by every slot without raw events: a slot's first event replaces it, so it is never written. */
export const NO_EVENTS: never[] = [];

/** A new idle slot, every field set in one order so that slots share one hidden class. */
export function newSlot<T extends KubeObject, R>(
  uid: string,
  latest: ObjectEvent<T>,
  route: R,
  priority: number,
): Slot<T, R> {
  return {
    uid,
    state: 'idle',
    priority,
    events: NO_EVENTS,
    latest,
    route,
    requeueTimer: undefined,
    queuedPriority: undefined,
    queuedPosition: undefined,
    woken: false,
    queuedAt: 0,
    retrying: false,
    trace: undefined,
    traceRuns: 0,
    links: undefined,
  };
}
