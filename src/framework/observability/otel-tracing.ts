// The only module that loads the OpenTelemetry SDK; `loadTracing` imports it when tracing is on, so an
// operator without tracing never loads it (a spec checks).
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
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

/** A {@link Tracing} exporting OTLP/HTTP JSON through a batch processor with bounded queues. */
export function createOtelTracing(options: TracingOptions): Tracing {
  registerContextManager();
  const resource = resourceFromAttributes({
    'service.name': options.serviceName ?? 'konductor',
    ...(options.instanceId ? { 'service.instance.id': options.instanceId } : {}),
  }).merge(detectResources({ detectors: [envDetector] }));
  // Two exports in flight at most: thirty 512-span bodies would only hold memory while a collector is slow.
  const exporter = new OTLPTraceExporter({
    ...(options.url ? { url: options.url } : {}),
    concurrencyLimit: 2,
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
