import type { Link } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import {
  detached,
  eventLink,
  inSpan,
  noTracing,
  type Tracing,
} from '../../../src/framework/observability/tracing.js';
import { Reactor, type ProcessResult } from '../../../src/framework/reactor/reactor.js';
import { deferred, widgetEvent, type Widget } from './helpers.js';
import { inMemoryTracing } from '../../support/in-memory-tracing.js';

/**
 * Which reactor runs become traces, on an in-memory exporter: only runs that do something, a retry
 * continuing its failed run's trace, wake-ups linking to what woke them, background work outside.
 */

const traces = inMemoryTracing();
const { tracing } = traces;

/** A reactor whose runs call `work(run number)`. */
function reactorOf(work: (run: number) => Promise<ProcessResult>, traced: Tracing = tracing) {
  let runs = 0;
  return new Reactor<Widget, string>(() => work(runs++), { tracing: traced });
}

const spans = (): ReadableSpan[] => traces.spans();
const named = (name: string): ReadableSpan[] => spans().filter((s) => s.name === name);
const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

describe('traced reactor runs', () => {
  test('a run that makes no span exports nothing (the echo of our own write)', async () => {
    const reactor = reactorOf(async () => undefined);
    reactor.push(widgetEvent('a', 1), 'r');
    await reactor.onIdle();
    expect(spans()).toEqual([]);
  });

  test("a run that does something is a root span from the object's queueing, with a queue span and its work beneath", async () => {
    const reactor = reactorOf(() => inSpan('handler created', {}, async () => undefined));
    reactor.push(widgetEvent('a', 1), 'r');
    await reactor.onIdle();

    const [run] = named('run Widget');
    expect(run?.parentSpanContext).toBeUndefined();
    expect(run?.attributes).toMatchObject({
      'konductor.object.name': 'widget-a',
      'konductor.object.uid': 'a',
      'konductor.object.resource_version': '1',
      'konductor.run.started_by': 'event',
    });
    const [queue] = named('queue');
    expect(parentOf(queue!)).toBe(run!.spanContext().spanId);
    expect(queue!.startTime).toEqual(run!.startTime);
    expect(parentOf(named('handler created')[0]!)).toBe(run!.spanContext().spanId);
  });

  test("a retry's run is a child of the failed run; the run after a success starts a new trace", async () => {
    const reactor = reactorOf((run) =>
      inSpan('handler created', {}, async () =>
        run === 0 ? { requeueAfterMs: 1, retry: true } : undefined,
      ),
    );
    reactor.push(widgetEvent('a', 1), 'r');
    await new Promise((resolve) => setTimeout(resolve, 50));
    await reactor.onIdle();
    reactor.push(widgetEvent('a', 2), 'r');
    await reactor.onIdle();

    const [failed, retried, later] = named('run Widget');
    expect(parentOf(retried!)).toBe(failed!.spanContext().spanId);
    expect(retried!.spanContext().traceId).toBe(failed!.spanContext().traceId);
    expect(retried!.attributes['konductor.run.started_by']).toBe('requeue');
    expect(later!.parentSpanContext).toBeUndefined();
    expect(later!.spanContext().traceId).not.toBe(failed!.spanContext().traceId);
  });

  test('a wake-up carries links to what woke the object, at most 8, the newest kept', async () => {
    const busy = deferred();
    const reactor = reactorOf((run) =>
      run === 0
        ? busy.promise.then(() => undefined)
        : inSpan('owned config', {}, async () => undefined),
    );
    reactor.push(widgetEvent('a', 1), 'r'); // runs (and holds) while the wake-ups arrive
    const links: Link[] = [];
    for (let i = 0; i < 10; i++) links.push(eventLink(tracing, `child ${i}`, {})!);
    for (const link of links) reactor.wake(widgetEvent('a', 1), 'r', link);
    busy.resolve();
    await reactor.onIdle();

    const [run] = named('run Widget');
    expect(run!.attributes['konductor.run.started_by']).toBe('wake');
    expect(run!.links.map((l) => l.context.spanId)).toEqual(
      links.slice(2).map((l) => l.context.spanId),
    );
  });

  test('work detached from a run (a spawned worker) is not part of its trace', async () => {
    let background: Promise<void> | undefined;
    const reactor = reactorOf(async () => {
      await inSpan('handler created', {}, async () => undefined);
      background = detached(() => inSpan('later request', {}, async () => undefined));
      return undefined;
    });
    reactor.push(widgetEvent('a', 1), 'r');
    await reactor.onIdle();
    await background;
    expect(named('later request')).toEqual([]);
  });

  test('with tracing off, nothing is made and the processor runs as before', async () => {
    const reactor = reactorOf(
      () => inSpan('handler created', {}, async () => undefined),
      noTracing,
    );
    reactor.push(widgetEvent('a', 1), 'r');
    await reactor.onIdle();
    expect(spans()).toEqual([]);
  });
});
