import {
  context,
  createContextKey,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import type { Logger } from './logger.js';

/**
 * OpenTelemetry tracing as the framework uses it: off unless configured (see {@link loadTracing}).
 * Entry points (an object's processing run, a timer tick, a daemon iteration, a webhook request) start
 * a trace; what runs inside them (handler attempts, API requests) becomes its spans through the async
 * context, so no component below the entry points is handed a tracer.
 */
export interface Tracing {
  /** False: no span is made, and nothing of the OpenTelemetry SDK is loaded. */
  readonly on: boolean;
  /** Makes the spans; undefined when off. */
  readonly tracer: Tracer | undefined;
  /** Exports the spans still buffered, giving up after `timeoutMs` (default 5 s). */
  flush(timeoutMs?: number): Promise<void>;
  /** Flushes, then stops exporting: the process is ending. */
  shutdown(timeoutMs?: number): Promise<void>;
}

/** Tracing off. */
export const noTracing: Tracing = Object.freeze({
  on: false,
  tracer: undefined,
  flush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
});

/** Span attribute values from tenants (names, messages) are cut to this many characters. */
export const MAX_ATTRIBUTE_LENGTH = 256;

const TRACER = createContextKey('konductor.tracer');
const RUN = createContextKey('konductor.run');
const BUDGET = createContextKey('konductor.span-budget');

/** Cuts a tenant-controlled value to {@link MAX_ATTRIBUTE_LENGTH} characters. */
export function capped(value: string): string {
  return value.length > MAX_ATTRIBUTE_LENGTH ? value.slice(0, MAX_ATTRIBUTE_LENGTH) : value;
}

/**
 * One processing run's root span, made only once something in the run needs it (a handler attempt,
 * an API request, a log line): runs on the echo of the operator's own write, or with nothing due,
 * export nothing. It starts when the object was queued, with a `queue` child up to the run's start.
 */
export class RunSpan {
  private span: Span | undefined;
  private spanContextValue: Context | undefined;
  private ended = false;
  private readonly attributes: Attributes;

  constructor(
    private readonly tracer: Tracer,
    private readonly name: string,
    attributes: Attributes,
    /** Epoch milliseconds (fractional) of the object's queueing and of the run's start. */
    private readonly queuedAt: number,
    private readonly startedAt: number,
    /** The run this one retries: it continues that trace. */
    private readonly parent: SpanContext | undefined,
    private readonly links: Link[],
  ) {
    this.attributes = { ...attributes };
  }

  /** Sets an attribute of the root span, made or not. */
  set(key: string, value: string | number | boolean): void {
    if (this.span) this.span.setAttribute(key, value);
    else this.attributes[key] = value;
  }

  /** The context whose active span is the run's root, making the span on first use. */
  context(): Context {
    if (this.spanContextValue) return this.spanContextValue;
    // Work the run left behind (a promise it did not await) must not make a root nobody ends.
    if (this.ended) return runContext(this.tracer, this);
    const base = this.parent ? trace.setSpanContext(ROOT_CONTEXT, this.parent) : ROOT_CONTEXT;
    this.span = this.tracer.startSpan(
      this.name,
      {
        kind: SpanKind.INTERNAL,
        startTime: this.queuedAt,
        attributes: this.attributes,
        links: this.links,
        root: this.parent === undefined,
      },
      base,
    );
    this.spanContextValue = trace.setSpan(runContext(this.tracer, this), this.span);
    this.tracer
      .startSpan('queue', { startTime: this.queuedAt }, this.spanContextValue)
      .end(this.startedAt);
    return this.spanContextValue;
  }

  /** Runs `fn` as this run: spans made inside it are its children (the root is made on demand). */
  within<T>(fn: () => T): T {
    return context.with(runContext(this.tracer, this), fn);
  }

  /** The root span's identity, if it was made. */
  get spanContext(): SpanContext | undefined {
    return this.span?.spanContext();
  }

  /** Ends the root span, if it was made; `error` marks it failed. */
  end(error?: unknown): void {
    this.ended = true;
    if (!this.span) return;
    if (error !== undefined) markFailed(this.span, error);
    this.span.end();
  }
}

function runContext(tracer: Tracer, run: RunSpan): Context {
  return ROOT_CONTEXT.setValue(TRACER, tracer).setValue(RUN, run);
}

/** The run `fn` is part of, if any. */
export function currentRun(): RunSpan | undefined {
  return context.active().getValue(RUN) as RunSpan | undefined;
}

/** The context a new child span starts under: the active span's, or the current run's root. */
function parentContext(): Context | undefined {
  const active = context.active();
  if (trace.getSpan(active)) return active;
  return (active.getValue(RUN) as RunSpan | undefined)?.context();
}

/** Options of {@link inSpan} and {@link rootSpan}. */
export interface SpanStart {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** A root span only: at most this many spans beneath it (a daemon running for days); the rest are not made. */
  maxSpans?: number;
}

/** Whether work here is traced: {@link inSpan} would make a span (so its name and attributes are worth building). */
export function traced(): boolean {
  return context.active().getValue(TRACER) !== undefined;
}

/**
 * Runs `fn` in a child span of the active span (or run), ended when `fn` settles; a throw marks it
 * failed. Outside any traced work, or with tracing off, `fn` runs with no span.
 */
export function inSpan<T>(
  name: string,
  start: SpanStart,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const active = context.active();
  const tracer = active.getValue(TRACER) as Tracer | undefined;
  if (!tracer) return fn(undefined);
  const budget = active.getValue(BUDGET) as { left: number } | undefined;
  if (budget && budget.left-- <= 0) return fn(undefined);
  const parent = parentContext();
  if (!parent) return fn(undefined);
  return spanned(tracer.startSpan(name, start, parent), parent, fn);
}

/**
 * Runs `fn` in a new trace's root span (a timer tick, a daemon iteration, a webhook request). `start`
 * may be a function, called only when tracing is on: a timer ticking 1,000 times a second then builds
 * no attributes it would throw away.
 */
export function rootSpan<T>(
  tracing: Tracing,
  name: string,
  start: SpanStart | (() => SpanStart),
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const tracer = tracing.tracer;
  if (!tracer) return detached(() => fn(undefined));
  const { maxSpans, ...options } = typeof start === 'function' ? start() : start;
  let base = ROOT_CONTEXT.setValue(TRACER, tracer);
  if (maxSpans !== undefined) base = base.setValue(BUDGET, { left: maxSpans });
  return spanned(tracer.startSpan(name, { ...options, root: true }, base), base, fn);
}

function spanned<T>(
  span: Span,
  parent: Context,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await fn(span);
    } catch (error) {
      markFailed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The active span, if any (a handler's, a tick's), to add what only its end knows. */
export function activeSpan(): Span | undefined {
  return trace.getSpan(context.active());
}

/**
 * Records something that happened outside any traced work (a child's watch event) as a span of its
 * own, ended at once, and returns a link to it for the run it causes; undefined with tracing off.
 */
export function eventLink(
  tracing: Tracing,
  name: string,
  attributes: Attributes,
): Link | undefined {
  const tracer = tracing.tracer;
  if (!tracer) return undefined;
  const span = tracer.startSpan(name, { attributes, root: true }, ROOT_CONTEXT);
  span.end();
  return { context: span.spanContext() };
}

/** Marks a span failed with the error's (capped) message. */
export function markFailed(span: Span, error: unknown): void {
  const message = capped(error instanceof Error ? error.message : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute('error.type', error instanceof Error ? error.name : typeof error);
}

/**
 * Runs `fn` outside any trace: for background work started from inside traced work (timers and
 * daemons spawned during a run, the Event queue's drain, lazily started watches), which would
 * otherwise stay children of that run forever.
 */
export function detached<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}

/** The trace and span ids of the active span (or run, whose root is then made), for log lines. */
export function traceFields(): { trace_id: string; span_id: string } | undefined {
  const parent = parentContext();
  const span = parent && trace.getSpan(parent);
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** The active trace's id, if any. */
export function currentTraceId(): string | undefined {
  return traceFields()?.trace_id;
}

/** What {@link loadTracing} needs; every field is optional, and the `OTEL_*` variables fill the rest. */
export interface TracingOptions {
  /** The OTLP/HTTP traces URL. Default: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, else `http://localhost:4318/v1/traces`. */
  url?: string;
  /** `service.name` when `OTEL_SERVICE_NAME` is unset. Default `konductor`. */
  serviceName?: string;
  /** `service.instance.id`: the replica. */
  instanceId?: string;
  /** `konductor.identity` on every span: which operator (its annotation prefix) made it. */
  identity?: string;
  /** How long spans wait to be sent in a batch. Default 5 s (`OTEL_BSP_SCHEDULE_DELAY`). */
  batchDelay?: number;
  /** Registers the provider globally, so `trace.getTracer()` in handlers nests under the framework's spans. Default false. */
  global?: boolean;
  /** Where the SDK's own warnings go (a collector that refuses or cannot be reached, dropped spans), at most one line a minute. Default: nowhere. */
  logger?: Logger;
}

/**
 * Starts tracing: loads the OpenTelemetry SDK (only now), exports OTLP over HTTP (JSON), samples as
 * `OTEL_TRACES_SAMPLER` says (default: every trace), and carries the context through async calls.
 */
export async function loadTracing(options: TracingOptions = {}): Promise<Tracing> {
  const { createOtelTracing } = await import('./otel-tracing.js');
  return createOtelTracing(options);
}
