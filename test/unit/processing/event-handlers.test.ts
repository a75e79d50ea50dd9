import { runEventHandlers } from '../../../src/framework/processing/event-handlers.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import type { EventHandlerSpec } from '../../../src/framework/intents/handler-specs.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import type { ObjectEvent } from '../../../src/framework/watching/watch-events.js';
import { installFakeClock, uninstallFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { WIDGET_API_VERSION, widgetEvent, widgetResource } from '../../support/widget-objects.js';
import { makeClient } from '../watching/fake-api.js';

/** A watch event of Widget `w1` at size `size` (also its resourceVersion). */
function event(type: ObjectEvent['type'], size: number): ObjectEvent<KubeObject> {
  return widgetEvent({ resourceVersion: String(size), spec: { size } }, { type });
}

function eventHandler(
  id: string,
  fn: EventHandlerSpec['fn'],
  options: EventHandlerSpec['options'] = {},
): EventHandlerSpec {
  return {
    kind: 'event',
    id,
    resource: { apiVersion: WIDGET_API_VERSION, name: widgetResource.plural },
    options,
    fn,
  };
}

describe('@on.event handler metrics', () => {
  const client = makeClient();
  afterAll(() => client.close());
  afterEach(uninstallFakeClock);

  async function run(
    handlers: EventHandlerSpec[],
    events: ObjectEvent<KubeObject>[],
  ): Promise<MetricsRecorder> {
    const metrics = new MetricsRecorder();
    await runEventHandlers(
      handlers,
      events,
      silentLogger(),
      new AbortController().signal,
      client,
      metrics,
    );
    return metrics;
  }

  test('each run is counted in handler_runs_total by handler id, as a success or a failure', async () => {
    const handlers = [
      eventHandler('Audit.record', () => undefined),
      eventHandler('Audit.broken', () => {
        throw new Error('audit sink down');
      }),
    ];

    const metrics = await run(handlers, [
      event('ADDED', 1),
      event('MODIFIED', 2),
      event('DELETED', 2),
    ]);

    expect(
      metrics.counter('handler_runs_total', { handler: 'Audit.record', result: 'success' }),
    ).toBe(3);
    expect(
      metrics.counter('handler_runs_total', { handler: 'Audit.broken', result: 'failure' }),
    ).toBe(3);
    expect(metrics.counter('handler_runs_total')).toBe(6);
  });

  test('each run is timed in handler_duration_seconds', async () => {
    const clock = installFakeClock();
    const running = run(
      [eventHandler('Audit.record', () => clock.sleep(1_500))],
      [event('ADDED', 1)],
    );
    await clock.advanceAsync(1_500);
    const metrics = await running;

    const durations = metrics.histograms.get('handler_duration_seconds');
    expect(durations?.count).toBe(1);
    expect(durations!.sum).toBe(1.5);
  });

  test('a handler its `when` filter skips is not counted', async () => {
    const metrics = await run(
      [
        eventHandler('Audit.big', () => undefined, {
          when: (body) => (body.spec as { size: number }).size > 5,
        }),
      ],
      [event('ADDED', 1)],
    );

    expect(metrics.counter('handler_runs_total')).toBe(0);
  });
});

describe('@on.event handler failures', () => {
  const client = makeClient();
  afterAll(() => client.close());

  test.each([
    [
      'throw undefined',
      (): never => {
        throw undefined;
      },
    ],
    ['Promise.reject()', (): Promise<never> => Promise.reject()],
    [
      'a thrown string',
      (): never => {
        throw 'audit sink down';
      },
    ],
  ])('%s counts as a failure, not a success', async (_, fail) => {
    const metrics = new MetricsRecorder();
    await runEventHandlers(
      [eventHandler('Audit.broken', fail)],
      [event('ADDED', 1)],
      silentLogger(),
      new AbortController().signal,
      client,
      metrics,
    );

    expect(
      metrics.counter('handler_runs_total', { handler: 'Audit.broken', result: 'failure' }),
    ).toBe(1);
    expect(
      metrics.counter('handler_runs_total', { handler: 'Audit.broken', result: 'success' }),
    ).toBe(0);
  });
});

describe('@on.event handlers and the default handler timeout', () => {
  const client = makeClient();
  afterAll(() => client.close());
  let clock: FakeClock;
  beforeEach(() => {
    clock = installFakeClock();
  });
  afterEach(uninstallFakeClock);

  test('a hung handler is abandoned at the timeout: its signal aborts, it counts as a failure, and the next handlers and events run', async () => {
    const abortedAfter: number[] = [];
    const calls: string[] = [];
    const began = clock.now();
    const hung = eventHandler('Audit.hung', ({ signal, type }) => {
      calls.push(`hung ${type}`);
      signal.addEventListener('abort', () => abortedAfter.push(clock.now() - began), {
        once: true,
      });
      return new Promise<never>(() => undefined); // never settles, ignores its signal
    });
    const next = eventHandler('Audit.next', ({ type }) => {
      calls.push(`next ${type}`);
    });
    const metrics = new MetricsRecorder();
    let finished = false;
    const done = runEventHandlers(
      [hung, next],
      [event('ADDED', 1), event('MODIFIED', 2)],
      silentLogger(),
      new AbortController().signal,
      client,
      metrics,
      10_000,
    ).then(() => {
      finished = true;
    });
    await clock.advanceAsync(9_999);
    expect(calls).toEqual(['hung ADDED']);
    await clock.advanceAsync(10_001);
    await done;
    expect(finished).toBe(true);
    expect(calls).toEqual(['hung ADDED', 'next ADDED', 'hung MODIFIED', 'next MODIFIED']);
    expect(abortedAfter).toEqual([10_000, 20_000]);
    expect(
      metrics.counter('handler_runs_total', { handler: 'Audit.hung', result: 'failure' }),
    ).toBe(2);
    expect(
      metrics.counter('handler_runs_total', { handler: 'Audit.next', result: 'success' }),
    ).toBe(2);
  });

  test('without a timeout a slow handler is waited for and succeeds', async () => {
    const metrics = new MetricsRecorder();
    const slow = eventHandler(
      'Audit.slow',
      () => new Promise<void>((resolve) => setTimeout(resolve, 3_600_000)),
    );
    const done = runEventHandlers(
      [slow],
      [event('ADDED', 1)],
      silentLogger(),
      new AbortController().signal,
      client,
      metrics,
    );
    await clock.advanceAsync(3_600_000);
    await done;
    expect(
      metrics.counter('handler_runs_total', { handler: 'Audit.slow', result: 'success' }),
    ).toBe(1);
  });
});

describe('@on.event handler filters', () => {
  const client = makeClient();
  afterAll(() => client.close());

  function labelled(
    labels: Record<string, string>,
    annotations: Record<string, string> = {},
  ): ObjectEvent<KubeObject> {
    const base = event('MODIFIED', 1);
    return {
      ...base,
      object: { ...base.object, metadata: { ...base.object.metadata, labels, annotations } },
    };
  }

  async function seen(
    options: EventHandlerSpec['options'],
    events: ObjectEvent<KubeObject>[],
  ): Promise<number> {
    let calls = 0;
    await runEventHandlers(
      [eventHandler('Audit.record', () => void calls++, options)],
      events,
      silentLogger(),
      new AbortController().signal,
      client,
    );
    return calls;
  }

  test('`labels` lets through only objects with matching labels', async () => {
    expect(
      await seen({ labels: { tier: 'gold' } }, [
        labelled({ tier: 'gold' }),
        labelled({ tier: 'bronze' }),
        labelled({}),
      ]),
    ).toBe(1);
  });

  test('`annotations` lets through only objects with matching annotations', async () => {
    expect(
      await seen({ annotations: { audit: 'yes' } }, [
        labelled({}, { audit: 'yes' }),
        labelled({}, { audit: 'no' }),
      ]),
    ).toBe(1);
  });
});
