// The only module that loads the OpenTelemetry SDK; `loadTracing` imports it when tracing is on, so an
// operator without tracing never loads it (a spec checks).
import { context, diag, DiagLogLevel, trace, type DiagLogger } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from './logger.js';
import { MAX_ATTRIBUTE_LENGTH, type Tracing, type TracingOptions } from './tracing.js';

/** The SDK's default attribute length is unbounded: tenants' names and messages must not be. */
const SPAN_LIMITS = {
  attributeValueLengthLimit: MAX_ATTRIBUTE_LENGTH,
  attributeCountLimit: 32,
  eventCountLimit: 16,
  linkCountLimit: 16,
};

let contextManager: AsyncLocalStorageContextManager | undefined;

/** Carries the active span through async calls; an application's own context manager, if any, stays. */
function registerContextManager(): void {
  if (contextManager) return;
  const manager = new AsyncLocalStorageContextManager().enable();
  if (context.setGlobalContextManager(manager)) contextManager = manager;
  else manager.disable();
}

/** The SDK's warnings and errors as log lines, one a minute at most: a collector down fails every export. */
function diagLogger(logger: Logger): DiagLogger {
  let last = -Infinity;
  let held = 0;
  const write = (message: string): void => {
    const now = Date.now();
    if (now - last < 60_000) {
      held += 1;
      return;
    }
    logger.warn({ suppressed: held }, `tracing: ${message.slice(0, 500)}`);
    last = now;
    held = 0;
  };
  const quiet = (): void => undefined;
  return { error: write, warn: write, info: quiet, debug: quiet, verbose: quiet };
}

/** A {@link Tracing} exporting OTLP/HTTP JSON through a batch processor with bounded queues. */
export function createOtelTracing(options: TracingOptions): Tracing {
  registerContextManager();
  if (options.logger)
    diag.setLogger(diagLogger(options.logger), {
      logLevel: DiagLogLevel.WARN,
      suppressOverrideMessage: true,
    });
  const resource = resourceFromAttributes({
    'service.name': options.serviceName ?? 'konductor',
    ...(options.instanceId ? { 'service.instance.id': options.instanceId } : {}),
    ...(options.identity ? { 'konductor.identity': options.identity } : {}),
  }).merge(detectResources({ detectors: [envDetector] }));
  // A flush sends every queued batch at once: 2,048 spans in batches of 512 are 4 requests, and the
  // exporter refuses (drops) any beyond its limit. Eight leaves room without holding 30 bodies.
  const exporter = new OTLPTraceExporter({
    ...(options.url ? { url: options.url } : {}),
    concurrencyLimit: 8,
  });
  const processor = new BatchSpanProcessor(
    exporter,
    options.batchDelay === undefined ? {} : { scheduledDelayMillis: options.batchDelay },
  );
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [processor],
    spanLimits: SPAN_LIMITS,
  });
  if (options.global) trace.setGlobalTracerProvider(provider);
  const within = (work: Promise<void>, timeoutMs: number): Promise<void> =>
    Promise.race([
      work.catch(() => undefined),
      new Promise<void>((resolve) =>
        setTimeout(resolve, Math.min(Math.max(0, timeoutMs), 60_000)).unref(),
      ),
    ]);
  return {
    on: true,
    tracer: provider.getTracer('konductor'),
    flush: (timeoutMs = 5_000) => within(provider.forceFlush(), timeoutMs),
    shutdown: async (timeoutMs = 5_000) => {
      await within(provider.forceFlush(), timeoutMs);
      await within(provider.shutdown(), timeoutMs);
    },
  };
}
