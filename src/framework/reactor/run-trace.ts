import type { Attributes, Link } from '@opentelemetry/api';
import type { KubeObject } from '../objects/kube-object.js';
import { RunSpan, type Tracing } from '../observability/tracing.js';
import type { ProcessResult } from './reactor-contract.js';
import type { Slot } from './object-slot.js';

/** A failing object's runs share one trace up to this many; then a new one starts. */
const MAX_RUNS_PER_TRACE = 20;
/** Links kept for an object's next run. */
const MAX_LINKS = 8;

/**
 * The root span of a run about to start, made only if something in the run needs it; undefined with
 * tracing off. A run after a failed one continues its trace as a child (one trace per change, across
 * retries); a run woken by child changes links to them.
 */
export function beginRunTrace<T extends KubeObject, R>(
  tracing: Tracing,
  slot: Slot<T, R>,
  events: number,
): RunSpan | undefined {
  const tracer = tracing.tracer;
  if (!tracer) return undefined;
  const object = slot.latest.object;
  const meta = object.metadata ?? {};
  const links = slot.links ?? [];
  slot.links = undefined;
  const attributes: Attributes = {
    'k8s.namespace.name': meta.namespace ?? '',
    'konductor.object.name': meta.name ?? '',
    'konductor.object.uid': meta.uid ?? '',
    'konductor.object.resource_version': meta.resourceVersion ?? '',
    'konductor.object.kind': object.kind ?? '',
    'konductor.run.started_by': events > 0 ? 'event' : links.length > 0 ? 'wake' : 'requeue',
    'konductor.run.events': events,
    'konductor.run.retry_of_previous': slot.trace !== undefined,
  };
  const origin = performance.timeOrigin;
  return new RunSpan(
    tracer,
    `run ${object.kind ?? 'object'}`,
    attributes,
    origin + slot.queuedAt,
    origin + performance.now(),
    slot.trace,
    links,
  );
}

/** A child's event to link the object's next run to; the oldest go beyond 8. */
export function addLink<T extends KubeObject, R>(slot: Slot<T, R>, link: Link): void {
  const links = (slot.links ??= []);
  if (links.length >= MAX_LINKS) links.shift();
  links.push(link);
}

/** Ends the run's root span and keeps what a retry continues; a run that traced nothing changes nothing. */
export function endRunTrace<T extends KubeObject, R>(
  slot: Slot<T, R>,
  run: RunSpan | undefined,
  result: ProcessResult,
  error?: unknown,
): void {
  if (!run) return;
  if (result?.requeueAfterMs !== undefined)
    run.set('konductor.run.requeue_after_ms', result.requeueAfterMs);
  run.end(error);
  const made = run.spanContext;
  if (!made) return;
  if (result?.retry === true && slot.traceRuns < MAX_RUNS_PER_TRACE) {
    slot.trace = made;
    slot.traceRuns += 1;
  } else {
    slot.trace = undefined;
    slot.traceRuns = 0;
  }
}
