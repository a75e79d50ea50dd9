import {
  RunSpan,
  inSpan,
  MAX_ATTRIBUTE_LENGTH,
  markFailed,
  rootSpan,
  traceFields,
} from '../../../src/framework/observability/tracing.js';
import { inMemoryTracing } from '../../support/in-memory-tracing.js';

const { tracing, spans } = inMemoryTracing();

describe('the tracing facade', () => {
  test('outside traced work, inSpan runs its work with no span', async () => {
    expect(await inSpan('GET /api/v1/namespaces', {}, async (span) => span)).toBeUndefined();
    expect(spans()).toEqual([]);
  });

  test('a root span with maxSpans keeps that many spans beneath it; the rest run unspanned', async () => {
    await rootSpan(tracing, 'daemon watcher', { maxSpans: 2 }, async () => {
      for (let i = 0; i < 5; i++) await inSpan(`request ${i}`, {}, async () => undefined);
    });
    expect(spans().map((s) => s.name)).toEqual(['request 0', 'request 1', 'daemon watcher']);
  });

  test('log lines inside a span get its trace and span ids; outside, none', async () => {
    expect(traceFields()).toBeUndefined();
    const inside = await rootSpan(tracing, 'timer tick', {}, async (span) => ({
      fields: traceFields(),
      ids: span!.spanContext(),
    }));
    expect(inside.fields).toEqual({ trace_id: inside.ids.traceId, span_id: inside.ids.spanId });
  });

  test('a failure marks the span as an error with its message cut to the attribute limit', async () => {
    const long = 'x'.repeat(MAX_ATTRIBUTE_LENGTH * 4);
    await rootSpan(tracing, 'admission /validate/size', {}, async (span) => {
      markFailed(span!, new Error(long));
    });
    const [span] = spans();
    expect(span!.status).toEqual({ code: 2, message: 'x'.repeat(MAX_ATTRIBUTE_LENGTH) });
    expect(span!.attributes['error.type']).toBe('Error');
  });

  test('a span ends as an error when its work throws, and the error goes on', async () => {
    await expect(
      rootSpan(tracing, 'timer tick', {}, async () => {
        throw new TypeError('broken');
      }),
    ).rejects.toThrow('broken');
    const [span] = spans();
    expect(span!.status.code).toBe(2);
    expect(span!.attributes['error.type']).toBe('TypeError');
  });

  test('work a run left behind after it ended makes no root for it: its spans start traces of their own', async () => {
    const now = performance.timeOrigin + performance.now();
    const run = new RunSpan(tracing.tracer!, 'run Widget', {}, now, now, undefined, []);
    run.end();
    await run.within(() => inSpan('GET late', {}, async () => undefined));
    const [late, ...others] = spans();
    expect(others).toEqual([]);
    expect(late!.name).toBe('GET late');
    expect(late!.parentSpanContext).toBeUndefined();
  });
});
