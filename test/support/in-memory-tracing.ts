/**
 * Tracing into memory for unit specs: a provider exporting each span as it ends, the `Tracing` the
 * framework takes, and the async context carried as the CLI's tracing carries it.
 *
 * ```ts
 * const traces = inMemoryTracing(); // in the file's scope: it registers beforeAll/afterAll/afterEach
 * traces.spans();                   // the finished spans, oldest first
 * ```
 */
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import type { Tracing } from '../../src/framework/observability/tracing.js';

export interface InMemoryTracing {
  tracing: Tracing;
  spans(): ReadableSpan[];
}

export function inMemoryTracing(): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(async () => {
    context.disable();
    await provider.shutdown();
  });
  afterEach(() => exporter.reset());
  return {
    tracing: {
      on: true,
      tracer: provider.getTracer('spec'),
      flush: () => provider.forceFlush(),
      shutdown: () => provider.shutdown(),
    },
    spans: () => exporter.getFinishedSpans(),
  };
}
