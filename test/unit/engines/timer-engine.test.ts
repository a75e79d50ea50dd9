import { jest } from '@jest/globals';
import { Duration } from 'luxon';
import type { ResourceSelector } from '../../../src/framework/api/resource.js';
import { timerKey } from '../../../src/framework/engines/timer-record.js';
import { TimerEngine, type TimerEngineOptions } from '../../../src/framework/engines/timers.js';
import { PermanentError, TemporaryError } from '../../../src/framework/intents/errors.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import type { TimerContext, TimerOptions } from '../../../src/framework/intents/handler-specs.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { LogCapture } from '../../support/log-capture.js';
import { WIDGET_API_VERSION, widget, widgetResource } from '../../support/widget-objects.js';
import { FakeObjectApi, FakePoster } from '../processing/fake-object-api.js';

/**
 * TimerEngine on the shared fake clock: jest's fake timers drive both `setTimeout` and `Date.now`, so a
 * schedule of minutes runs in milliseconds and every start time is exact.
 */

const T0 = Date.parse('2024-05-01T12:00:00.000Z');
const SELECTOR: ResourceSelector = { apiVersion: WIDGET_API_VERSION, name: widgetResource.plural };

let clock: FakeClock;

/** Milliseconds since T0. */
const elapsed = (): number => clock.now() - T0;
/** Moves the fake clock to T0 + `ms`, firing every timer due on the way (and settling promises between them). */
const advanceTo = async (ms: number): Promise<void> => {
  await clock.advanceAsync(T0 + ms - clock.now());
};
const wait = (ms: number): Promise<void> => clock.sleep(ms);
/** Stops the engine, letting the fake clock run while a run in progress ends. */
const stop = async (engine: TimerEngine): Promise<void> => {
  const stopped = engine.stopAll();
  await clock.advanceAsync(10_000);
  await stopped;
};

/** A timer engine over one fake Widget, with its API calls, Events, metrics and log lines recorded. */
function timerOn(
  options: TimerOptions,
  fn: (context: TimerContext) => unknown,
  object: KubeObject = widget(),
  engineOptions: Pick<TimerEngineOptions, 'runTimeoutMs'> = {},
) {
  const api = new FakeObjectApi(object);
  const poster = new FakePoster();
  const metrics = new MetricsRecorder();
  const log = new LogCapture();
  const make = (): TimerEngine =>
    new TimerEngine({
      api: api.asObjectApi(),
      timers: [{ kind: 'timer', id: 't', resource: SELECTOR, options, fn }],
      logger: log.logger,
      poster: poster.asEventPoster(),
      metrics,
      clock,
      ...engineOptions,
    });
  return { engine: make(), make, api, poster, metrics, log };
}

/** A handler recording when each run started and ended (ms since T0) and how many ran at once. */
function recorder(run: (context: TimerContext, index: number) => unknown = () => undefined) {
  const starts: number[] = [];
  const ends: number[] = [];
  let active = 0;
  let mostAtOnce = 0;
  const fn = async (context: TimerContext): Promise<void> => {
    const index = starts.length;
    starts.push(elapsed());
    active += 1;
    mostAtOnce = Math.max(mostAtOnce, active);
    try {
      await run(context, index);
    } finally {
      active -= 1;
      ends.push(elapsed());
    }
  };
  return { fn, starts, ends, mostAtOnce: () => mostAtOnce };
}

beforeEach(() => {
  clock = installFakeClock({ now: T0 });
});

afterEach(() => {
  clock.uninstall();
});

describe('timer engine: interval and overlap', () => {
  test('runs at first sight, then one interval after each run ended', async () => {
    const runs = recorder(() => wait(200));
    const { engine } = timerOn({ interval: 1 }, runs.fn);
    engine.observe(widget());
    await advanceTo(4_000);
    expect(runs.starts).toEqual([0, 1_200, 2_400, 3_600]);
    await stop(engine);
  });

  test('a run slower than the interval pushes the next one back: never two at once', async () => {
    const runs = recorder(() => wait(2_500));
    const { engine } = timerOn({ interval: 1 }, runs.fn);
    engine.observe(widget());
    await advanceTo(10_000);
    expect(runs.starts).toEqual([0, 3_500, 7_000]);
    expect(runs.mostAtOnce()).toBe(1);
    await stop(engine);
  });

  test('a sharp timer whose run outlasts the interval skips the missed grid slots instead of overlapping or bursting', async () => {
    const runs = recorder(() => wait(2_500));
    const { engine } = timerOn({ interval: 1, sharp: true }, runs.fn);
    engine.observe(widget());
    await advanceTo(9_500);
    expect(runs.starts).toEqual([0, 3_000, 6_000, 9_000]);
    expect(runs.mostAtOnce()).toBe(1);
    await stop(engine);
  });

  test('a sharp timer stays on its planned grid although every run starts late', async () => {
    const runs = recorder();
    const { engine } = timerOn({ interval: 1, sharp: true, initialDelay: 0.5 }, runs.fn);
    engine.observe(widget());
    // A busy event loop: every timer callback fires 30 ms after it was due.
    let late = 0;
    const realSetTimeout = globalThis.setTimeout;
    const spy = jest.spyOn(globalThis, 'setTimeout').mockImplementation(((
      callback: () => void,
      ms?: number,
    ) => {
      late += 1;
      return realSetTimeout(callback, (ms ?? 0) + 30);
    }) as typeof setTimeout);
    await advanceTo(60_000);
    spy.mockRestore();
    expect(late).toBeGreaterThan(50);
    // Lateness never accumulates: each run starts 30 ms after its slot on the 500 + k × 1000 grid.
    expect(runs.starts.slice(0, 3)).toEqual([500, 1_530, 2_530]);
    expect(runs.starts[runs.starts.length - 1]).toBe(59_530);
    await stop(engine);
  });
});

describe('timer engine: failures', () => {
  test('a failing run is logged, posted as a TimerFailed Event and counted, and the timer runs again at the next tick', async () => {
    const runs = recorder((_, index) => {
      if (index === 0) throw new Error('backup target unreachable');
    });
    const { engine, poster, metrics, log } = timerOn({ interval: 10 }, runs.fn);
    engine.observe(widget());
    await advanceTo(1);
    expect(log.atLeast('error').map((line) => line.msg)).toEqual([
      'timer t failed: backup target unreachable',
    ]);
    expect(poster.withReason('TimerFailed').map((event) => [event.type, event.message])).toEqual([
      ['Warning', 't failed: backup target unreachable'],
    ]);
    expect(metrics.counter('handler_runs_total', { handler: 't', result: 'retry' })).toBe(1);

    await advanceTo(10_001);
    expect(runs.starts).toEqual([0, 10_000]);
    expect(metrics.counter('handler_runs_total', { handler: 't', result: 'success' })).toBe(1);
    await stop(engine);
  });

  test('the retry count is passed to the handler and starts over after a success', async () => {
    const retries: number[] = [];
    const { engine } = timerOn({ interval: 1 }, ({ retry }) => {
      retries.push(retry);
      if (retries.length <= 2) throw new Error('not yet');
    });
    engine.observe(widget());
    await advanceTo(3_500);
    expect(retries).toEqual([0, 1, 2, 0]);
    await stop(engine);
  });

  test('a TemporaryError with a delay shorter than the interval retries after that delay', async () => {
    const runs = recorder((_, index) => {
      if (index === 0) throw new TemporaryError('lock held', { delay: 5 });
    });
    const { engine } = timerOn({ interval: 60 }, runs.fn);
    engine.observe(widget());
    await advanceTo(70_000);
    expect(runs.starts).toEqual([0, 5_000, 65_000]);
    await stop(engine);
  });

  test('a TemporaryError with a delay longer than the interval retries at the next tick', async () => {
    const runs = recorder((_, index) => {
      if (index === 0) throw new TemporaryError('lock held', { delay: 30 });
    });
    const { engine } = timerOn({ interval: 10 }, runs.fn);
    engine.observe(widget());
    await advanceTo(25_000);
    expect(runs.starts).toEqual([0, 10_000, 20_000]);
    await stop(engine);
  });

  test('a PermanentError stops the timer for that object, with a Warning saying so', async () => {
    const runs = recorder(() => {
      throw new PermanentError('no backup target');
    });
    const { engine, poster } = timerOn({ interval: 10 }, runs.fn);
    engine.observe(widget());
    await advanceTo(60_000);
    expect(runs.starts).toEqual([0]);
    expect(poster.withReason('TimerFailed')).toEqual([
      expect.objectContaining({
        type: 'Warning',
        message: expect.stringContaining(
          'failed permanently and stops for this object until it changes',
        ),
      }),
    ]);
    await stop(engine);
  });

  test('a timer stopped by a PermanentError runs again once the object changes', async () => {
    const runs = recorder((_, index) => {
      if (index === 0) throw new PermanentError('no backup target');
    });
    const { engine } = timerOn({ interval: 10 }, runs.fn);
    engine.observe(widget());
    await advanceTo(30_000);
    engine.observe(widget({ spec: { size: 2 } }));
    await advanceTo(45_000);
    expect(runs.starts).toEqual([0, 30_000, 40_000]);
    await stop(engine);
  });

  test('a timer failing on every run keeps running on schedule', async () => {
    const runs = recorder(() => {
      throw new Error('always broken');
    });
    const { engine, poster, metrics } = timerOn({ interval: 1 }, runs.fn);
    engine.observe(widget());
    await advanceTo(5_500);
    expect(runs.starts).toEqual([0, 1_000, 2_000, 3_000, 4_000, 5_000]);
    expect(poster.withReason('TimerFailed')).toHaveLength(6);
    expect(metrics.counter('handler_runs_total', { handler: 't', result: 'retry' })).toBe(6);
    await stop(engine);
  });
});

describe('timer engine: writes and the persisted schedule', () => {
  test('a short timer whose handler writes nothing causes no writes', async () => {
    const runs = recorder();
    const { engine, api } = timerOn({ interval: 1 }, runs.fn);
    engine.observe(widget());
    await advanceTo(5_500);
    expect(runs.starts).toHaveLength(6);
    expect(api.writes).toEqual([]);
    await stop(engine);
  });

  test("a long timer's schedule goes into the PATCH its handler causes anyway: one write, not two", async () => {
    const { engine, api } = timerOn({ interval: 'PT2M' }, ({ patch }) => {
      patch.metadata.labels['backup'] = 'done';
    });
    engine.observe(widget());
    await advanceTo(1);
    expect(api.writes).toHaveLength(1);
    const stored = api.object.metadata ?? {};
    expect(stored.labels).toEqual({ backup: 'done' });
    expect(JSON.parse(stored.annotations?.[timerKey('t')] ?? '{}')).toEqual({
      lastStart: '2024-05-01T12:00:00.000Z',
      lastEnd: '2024-05-01T12:00:00.000Z',
      lastSuccess: '2024-05-01T12:00:00.000Z',
    });
    await stop(engine);
  });

  test('a timer below the persistence threshold keeps its schedule in memory only', async () => {
    const { engine, api } = timerOn({ interval: 30, persistThreshold: 60 }, ({ patch }) => {
      patch.metadata.labels['checked'] = 'yes';
    });
    engine.observe(widget());
    await advanceTo(1);
    expect(api.writes).toHaveLength(1);
    expect(api.object.metadata?.annotations?.[timerKey('t')]).toBeUndefined();
    await stop(engine);
  });

  test('a restarted engine reading the persisted schedule waits for the remaining interval, neither running at once nor starting over', async () => {
    const runs = recorder(() => wait(1_000));
    const first = timerOn({ interval: 'PT2M', initialDelay: 'PT10S' }, runs.fn);
    first.engine.observe(widget());
    await advanceTo(11_000 + 1);
    expect(runs.starts).toEqual([10_000]);
    await advanceTo(60_000);
    await stop(first.engine);

    // The next process sees the object as stored, halfway through the interval.
    const restarted = first.make();
    restarted.observe(first.api.object);
    await advanceTo(130_999);
    expect(runs.starts).toEqual([10_000]);
    await advanceTo(131_000);
    expect(runs.starts).toEqual([10_000, 131_000]); // the previous run ended at 11 s; 11 s + 120 s
    await stop(restarted);
  });

  test('a restarted sharp timer stays on the grid it planned before the restart, although its last run started late', async () => {
    const runs = recorder();
    const first = timerOn({ interval: 'PT2M', initialDelay: 'PT10S', sharp: true }, runs.fn);
    const realSetTimeout = globalThis.setTimeout;
    const late = jest
      .spyOn(globalThis, 'setTimeout')
      .mockImplementation(((callback: () => void, ms?: number) =>
        realSetTimeout(callback, (ms ?? 0) + 30)) as typeof setTimeout);
    first.engine.observe(widget());
    await advanceTo(11_000);
    late.mockRestore();
    expect(runs.starts).toEqual([10_030]);
    await stop(first.engine);

    await advanceTo(60_000);
    const restarted = first.make();
    restarted.observe(first.api.object);
    await advanceTo(130_001);
    expect(runs.starts).toEqual([10_030, 130_000]);
    await stop(restarted);
  });

  test('a restarted engine whose persisted schedule is overdue runs at once', async () => {
    const runs = recorder();
    const lastRun = new Date(T0 - 600_000).toISOString();
    const record = JSON.stringify({ lastStart: lastRun, lastEnd: lastRun, lastSuccess: lastRun });
    const { engine } = timerOn({ interval: 'PT2M', initialDelay: 'PT10S' }, runs.fn);
    engine.observe(widget({ annotations: { [timerKey('t')]: record } }));
    await advanceTo(1);
    expect(runs.starts).toEqual([0]);
    await stop(engine);
  });
});

describe('timer engine: results delivery', () => {
  test("a returned value is stored at status[<timer id>], in the run's own write with the status it set", async () => {
    const { engine, api } = timerOn({ interval: 30 }, ({ patch }) => {
      patch.status['checked'] = true;
      return { healthy: 3, at: new Date(T0) };
    });
    engine.observe(widget());
    await advanceTo(1);
    expect(
      api.writes.map((write) => ('subresource' in write ? write.subresource : write.method)),
    ).toEqual(['status']);
    expect(api.object.status).toEqual({
      checked: true,
      t: { healthy: 3, at: '2024-05-01T12:00:00.000Z' },
    });
    await stop(engine);
  });

  test('a timer returning what status[<timer id>] already holds makes no write for it', async () => {
    const runs = recorder();
    const fn = async (context: TimerContext): Promise<unknown> => {
      await runs.fn(context);
      return { healthy: 3 };
    };
    const { engine, api } = timerOn({ interval: 1 }, fn);
    engine.observe(widget({ status: { t: { healthy: 3 } } }));
    await advanceTo(3_500);
    expect(runs.starts).toHaveLength(4);
    expect(api.writes).toEqual([]);
    await stop(engine);
  });

  test('a value that is not JSON is not stored, is reported by one Event, and the timer keeps running', async () => {
    const runs = recorder();
    const fn = async (context: TimerContext): Promise<unknown> => {
      await runs.fn(context);
      return () => 'a function';
    };
    const { engine, api, poster } = timerOn({ interval: 1 }, fn);
    engine.observe(widget());
    await advanceTo(3_500);
    expect(runs.starts).toHaveLength(4);
    expect(api.writes).toEqual([]);
    expect(poster.withReason('TimerResultNotStored').map((event) => event.message)).toEqual([
      'handler t returned a function, which is not JSON; return JSON data, or nothing',
    ]);
    expect(poster.withReason('TimerFailed')).toEqual([]);
    await stop(engine);
  });
});

describe('timer engine: durations', () => {
  test('interval, initial delay and idle accept ISO-8601 strings, luxon Durations and seconds alike', async () => {
    const iso = recorder();
    const luxon = recorder();
    const seconds = recorder();
    const engines = [
      timerOn({ interval: 'PT1.5S', initialDelay: 'PT0.5S' }, iso.fn).engine,
      timerOn(
        {
          interval: Duration.fromObject({ milliseconds: 1_500 }),
          initialDelay: Duration.fromObject({ seconds: 0.5 }),
        },
        luxon.fn,
      ).engine,
      timerOn({ interval: 1.5, initialDelay: 0.5 }, seconds.fn).engine,
    ];
    for (const engine of engines) engine.observe(widget());
    await advanceTo(5_000);
    expect(iso.starts).toEqual([500, 2_000, 3_500, 5_000]);
    expect(luxon.starts).toEqual(iso.starts);
    expect(seconds.starts).toEqual(iso.starts);
    for (const engine of engines) await stop(engine);
  });

  test('an interval computed from the object follows the object: a changed field reschedules the next run', async () => {
    const runs = recorder();
    const { engine } = timerOn(
      {
        interval: (object) =>
          `PT${String((object.spec as { everySeconds: number }).everySeconds)}S`,
      },
      runs.fn,
    );
    engine.observe(widget({ spec: { everySeconds: 10 } }));
    await advanceTo(25_000);
    expect(runs.starts).toEqual([0, 10_000, 20_000]);
    engine.observe(widget({ spec: { everySeconds: 2 } }));
    await advanceTo(25_000);
    expect(runs.starts).toEqual([0, 10_000, 20_000, 25_000]); // 22 s had passed: due at once
    await advanceTo(28_000);
    expect(runs.starts).toEqual([0, 10_000, 20_000, 25_000, 27_000]);
    await stop(engine);
  });

  test('an interval the object makes invalid is reported as a TimerInvalid Event instead of crashing the engine', async () => {
    const runs = recorder();
    const { engine, poster } = timerOn(
      { interval: (object) => String((object.spec as { every?: string }).every) },
      runs.fn,
    );
    engine.observe(widget({ spec: { every: 'hourly' } }));
    await advanceTo(5_000);
    expect(runs.starts).toEqual([]);
    expect(poster.withReason('TimerInvalid').map((event) => event.message)).toEqual([
      `t: timer t interval: 'hourly' is not a duration: give seconds (30), numbers with units ('90s', '5m', '1h30m') or ISO-8601 ('PT30S')`,
    ]);
    engine.observe(widget({ spec: { every: 'PT1S' } }));
    await advanceTo(5_001);
    expect(runs.starts).toEqual([5_000]);
    await stop(engine);
  });
});

describe('timer engine: idle and initial delay', () => {
  test('an idle timer runs only once the object has been unchanged for the idle period; every change restarts the wait', async () => {
    const runs = recorder();
    const { engine } = timerOn({ interval: 10, idle: 30 }, runs.fn);
    engine.observe(widget({ spec: { size: 1 } }));
    await advanceTo(20_000);
    engine.observe(widget({ spec: { size: 2 } }));
    await advanceTo(49_999);
    expect(runs.starts).toEqual([]);
    await advanceTo(70_000);
    expect(runs.starts).toEqual([50_000, 60_000, 70_000]);
    await stop(engine);
  });

  test('the initial delay holds the first run only', async () => {
    const runs = recorder();
    const { engine } = timerOn({ interval: 2, initialDelay: 5 }, runs.fn);
    engine.observe(widget());
    await advanceTo(9_000);
    expect(runs.starts).toEqual([5_000, 7_000, 9_000]);
    await stop(engine);
  });
});

describe('timer engine: lifecycle', () => {
  const gold = { labels: { tier: 'gold' } } as const;

  test('a timer starts when the object starts matching its filters and stops when it stops matching', async () => {
    const runs = recorder();
    const { engine } = timerOn({ interval: 1, ...gold }, runs.fn);
    engine.observe(widget());
    await advanceTo(2_500);
    expect(runs.starts).toEqual([]);

    engine.observe(widget({ labels: { tier: 'gold' } }));
    await advanceTo(4_000);
    expect(runs.starts).toEqual([2_500, 3_500]);

    engine.observe(widget({ labels: { tier: 'silver' } }));
    await advanceTo(10_000);
    expect(runs.starts).toEqual([2_500, 3_500]);
    expect(engine.size).toBe(0);
    await stop(engine);
  });

  test('a timer that stops matching mid-run has its signal aborted, and matching again soon does not start a second run alongside it', async () => {
    const aborted: number[] = [];
    const runs = recorder(async ({ signal }) => {
      signal.addEventListener('abort', () => aborted.push(elapsed()), { once: true });
      await wait(3_000); // ignores the abort: a slow, orderly end
    });
    const { engine } = timerOn({ interval: 1, ...gold }, runs.fn);
    engine.observe(widget({ labels: { tier: 'gold' } }));
    await advanceTo(500);
    engine.observe(widget());
    await advanceTo(1_000);
    engine.observe(widget({ labels: { tier: 'gold' } }));
    await advanceTo(3_500);
    expect(aborted).toEqual([500]);
    expect(runs.starts).toEqual([0, 3_000]); // the new timer's first run waited for the old run to end
    expect(runs.mostAtOnce()).toBe(1);
    await stop(engine);
  });

  test('an object being deleted stops its timer', async () => {
    const runs = recorder();
    const { engine } = timerOn({ interval: 1 }, runs.fn);
    engine.observe(widget());
    await advanceTo(1_500);
    engine.observe(widget({ deleting: true }));
    await advanceTo(5_000);
    expect(runs.starts).toEqual([0, 1_000]);
    expect(engine.size).toBe(0);
  });
});

const DAY_MS = 24 * 60 * 60 * 1000;

describe('timer engine: intervals longer than setTimeout allows (2^31-1 ms, about 24.8 days)', () => {
  // A bare setTimeout would fire after 1 ms and run the handler about a thousand times a second.
  test.each([30, 400])(
    'a P%iD timer runs once at first sight, not again until the day before, and again on the day',
    async (days) => {
      const runs = recorder();
      const { engine } = timerOn({ interval: `P${days}D` }, runs.fn);
      engine.observe(widget());
      await advanceTo(1_000);
      expect(runs.starts).toEqual([0]);
      await advanceTo((days - 1) * DAY_MS);
      expect(runs.starts).toEqual([0]);
      await advanceTo(days * DAY_MS);
      expect(runs.starts).toEqual([0, days * DAY_MS]);
      await stop(engine);
    },
  );

  test('a sharp P30D timer stays on its 30-day grid', async () => {
    const runs = recorder();
    const { engine } = timerOn({ interval: 'P30D', sharp: true }, runs.fn);
    engine.observe(widget());
    await advanceTo(1_000);
    expect(runs.starts).toEqual([0]);
    await advanceTo(60 * DAY_MS);
    expect(runs.starts).toEqual([0, 30 * DAY_MS, 60 * DAY_MS]);
    await stop(engine);
  });

  test('a TemporaryError asking for a 30-day delay under a 40-day interval retries at day 30, not at once', async () => {
    const runs = recorder((_, index) => {
      if (index === 0)
        throw new TemporaryError('next maintenance window', { delay: 30 * 24 * 3600 });
    });
    const { engine } = timerOn({ interval: 'P40D' }, runs.fn);
    engine.observe(widget());
    await advanceTo(1_000);
    expect(runs.starts).toEqual([0]);
    await advanceTo(29 * DAY_MS);
    expect(runs.starts).toEqual([0]);
    await advanceTo(30 * DAY_MS);
    expect(runs.starts).toEqual([0, 30 * DAY_MS]);
    await stop(engine);
  });
});

describe('timer engine: a forged or corrupt schedule annotation', () => {
  const key = timerKey('t');
  const valid = new Date(T0 - 60_000).toISOString();

  test.each([
    [
      'a time that is not a time',
      JSON.stringify({ lastStart: 'garbage', lastEnd: valid }),
      "lastStart 'garbage' is not an ISO-8601 UTC time",
    ],
    [
      'a number instead of a time',
      JSON.stringify({ lastStart: 5, lastEnd: valid }),
      'lastStart must be an ISO-8601 time string, got number',
    ],
    ['a missing field', JSON.stringify({ lastStart: valid }), 'lastEnd is missing'],
    ['not JSON', '{lastStart:', 'not valid JSON'],
    ['JSON that is not an object', 'null', 'not a JSON object'],
  ])(
    '%s is ignored with one Warning Event naming the annotation, and the timer runs at first sight',
    async (_, record, problem) => {
      const runs = recorder();
      const { engine, poster } = timerOn({ interval: 'PT2M' }, runs.fn);
      engine.observe(widget({ annotations: { [key]: record } }));
      await advanceTo(1);
      expect(runs.starts).toEqual([0]);
      const events = poster.withReason('InvalidAnnotation');
      expect(events.map((event) => event.type)).toEqual(['Warning']);
      expect(events[0]?.message).toContain(`annotation ${key} on default/w1: ${problem}`);
      await stop(engine);
    },
  );

  test('the Warning Event is posted once, not once per run, failure or restart of the timer', async () => {
    const runs = recorder(() => {
      throw new Error('still failing');
    });
    const forged = { [key]: JSON.stringify({ lastStart: 'garbage', lastEnd: 'garbage' }) };
    const { engine, poster } = timerOn({ interval: 'PT2M', labels: { tier: 'gold' } }, runs.fn);
    engine.observe(widget({ labels: { tier: 'gold' }, annotations: forged }));
    await advanceTo(10 * 60_000);
    engine.observe(widget({ annotations: forged })); // stops matching
    await advanceTo(11 * 60_000);
    engine.observe(widget({ labels: { tier: 'gold' }, annotations: forged })); // a new timer reads the same record
    await advanceTo(20 * 60_000);
    expect(runs.starts.length).toBeGreaterThan(5);
    expect(poster.withReason('InvalidAnnotation')).toHaveLength(1);
    await stop(engine);
  });

  test('a stored run far in the future does not suspend the timer: it is taken as now, and one Warning Event says so', async () => {
    const runs = recorder();
    const tenYears = new Date(T0 + 3_650 * DAY_MS).toISOString();
    const record = JSON.stringify({
      lastStart: tenYears,
      lastEnd: tenYears,
      lastSuccess: tenYears,
    });
    const { engine, poster } = timerOn({ interval: 'PT2M' }, runs.fn);
    engine.observe(widget({ annotations: { [key]: record } }));
    await advanceTo(119_999);
    expect(runs.starts).toEqual([]);
    await advanceTo(120_000);
    expect(runs.starts).toEqual([120_000]);
    const events = poster.withReason('InvalidAnnotation');
    expect(events).toHaveLength(1);
    expect(events[0]?.message).toContain(`annotation ${key} on default/w1: lastStart ${tenYears}`);
    expect(events[0]?.message).toContain('in the future');
    await stop(engine);
  });

  test('a sharp timer whose stored grid lies in the future keeps running every interval from now', async () => {
    const runs = recorder();
    const future = new Date(T0 + 365 * DAY_MS).toISOString();
    const past = new Date(T0 - 30_000).toISOString();
    const record = JSON.stringify({
      lastStart: past,
      lastEnd: past,
      lastPlanned: future,
      grid: future,
    });
    const { engine } = timerOn({ interval: 'PT2M', sharp: true }, runs.fn);
    engine.observe(widget({ annotations: { [key]: record } }));
    await advanceTo(6 * 60_000);
    expect(runs.starts).toEqual([120_000, 240_000, 360_000]);
    await stop(engine);
  });

  test('a valid record written by hand, with an offset and microseconds, is accepted without an Event', async () => {
    const runs = recorder();
    const record = JSON.stringify({
      lastStart: '2024-05-01T13:59:00.000000+02:00',
      lastEnd: '2024-05-01T13:59:00.000000+02:00',
    });
    const { engine, poster } = timerOn({ interval: 'PT2M' }, runs.fn);
    engine.observe(widget({ annotations: { [key]: record } }));
    await advanceTo(60_001);
    expect(runs.starts).toEqual([60_000]); // 11:59 UTC + 2 min
    expect(poster.withReason('InvalidAnnotation')).toEqual([]);
    await stop(engine);
  });
});

describe('timer engine: anything thrown is a failure', () => {
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
        throw 'disk full';
      },
    ],
  ])(
    '%s is counted, logged and posted as a failure, and retried at the next tick',
    async (_, fail) => {
      const runs = recorder((_context, index) => (index === 0 ? fail() : undefined));
      const { engine, poster, metrics } = timerOn({ interval: 10 }, runs.fn);
      engine.observe(widget());
      await advanceTo(1);
      expect(metrics.counter('handler_runs_total', { handler: 't', result: 'retry' })).toBe(1);
      expect(metrics.counter('handler_runs_total', { handler: 't', result: 'success' })).toBe(0);
      expect(poster.withReason('TimerFailed')).toHaveLength(1);
      await advanceTo(10_001);
      expect(runs.starts).toEqual([0, 10_000]);
      expect(metrics.counter('handler_runs_total', { handler: 't', result: 'success' })).toBe(1);
      await stop(engine);
    },
  );
});

describe('timer engine: the default handler timeout', () => {
  test('a run hanging past the timeout has its signal aborted, counts as a failure, and the timer goes on with its schedule', async () => {
    const aborted: number[] = [];
    const runs = recorder(({ signal }, index) => {
      signal.addEventListener('abort', () => aborted.push(elapsed()), { once: true });
      return index === 0 ? new Promise<never>(() => undefined) : undefined; // the first run hangs and ignores its signal
    });
    const { engine, poster, metrics } = timerOn({ interval: 60 }, runs.fn, widget(), {
      runTimeoutMs: 5_000,
    });
    engine.observe(widget());
    await advanceTo(4_999);
    expect(aborted).toEqual([]);
    await advanceTo(5_000);
    expect(aborted).toEqual([5_000]);
    expect(metrics.counter('handler_runs_total', { handler: 't', result: 'retry' })).toBe(1);
    expect(poster.withReason('TimerFailed').map((event) => event.message)).toEqual([
      "t failed: timed out after 5 s (the operator's handler timeout); its signal was aborted",
    ]);
    await advanceTo(65_000);
    expect(runs.starts).toEqual([0, 65_000]);
    await stop(engine);
  });

  test('without a timeout a slow run is waited for', async () => {
    const runs = recorder(() => wait(3_600_000));
    const { engine, metrics } = timerOn({ interval: 60 }, runs.fn);
    engine.observe(widget());
    await advanceTo(3_600_000);
    expect(metrics.counter('handler_runs_total', { handler: 't', result: 'success' })).toBe(1);
    expect(metrics.counter('handler_runs_total', { handler: 't', result: 'retry' })).toBe(0);
    await stop(engine);
  });
});
