import { Subject } from 'rxjs';
import { pino } from 'pino';
import {
  Reactor,
  type ObjectBatch,
  type ProcessResult,
  type ReactorOptions,
} from '../../../src/framework/reactor/reactor.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import type { WatchEvent } from '../../../src/framework/watching/watch-events.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';
import {
  ConcurrencyTracker,
  deferred,
  widgetEvent,
  type Widget,
  type WidgetEvent,
} from './helpers.js';

/**
 * The reactor on the shared fake clock: processors that take time sleep on it, so requeue delays,
 * drain deadlines and how soon a run starts are exact, whatever else the machine is doing.
 */

type Batch = ObjectBatch<Widget, string>;
type Processor = (batch: Batch) => Promise<ProcessResult>;

/** What a test sees of one run. */
interface Run {
  uid: string;
  /** `spec.n` of the state the run acted on. */
  latest: number;
  latestType: WidgetEvent['type'];
  /** `spec.n` of every raw event the run received. */
  events: number[];
  route: string;
  signal: AbortSignal;
}

const T0 = Date.parse('2024-05-01T12:00:00.000Z');
let clock: FakeClock;

/** Milliseconds since T0. */
const elapsed = (): number => clock.now() - T0;

/** Lets fake time run, a millisecond at a time, until `promise` settles; returns it. */
async function settle<T>(promise: Promise<T>, what: string): Promise<T> {
  let done = false;
  const finished = (): void => void (done = true);
  promise.then(finished, finished);
  await clock.until(() => done, what, { stepMs: 1 });
  return promise;
}

/** Lets fake time run until nothing is queued or running. */
const idle = (reactor: Reactor<Widget, string>): Promise<void> =>
  settle(reactor.onIdle(), 'the reactor to go idle');

const reactors: Reactor<Widget, string>[] = [];

/** A reactor whose runs are recorded in `runs` (in start order) before `processor` handles them. */
function reactorWith(processor: Processor = async () => undefined, options: ReactorOptions = {}) {
  const runs: Run[] = [];
  const reactor = new Reactor<Widget, string>(async (batch) => {
    runs.push({
      uid: batch.uid,
      latest: batch.latest.object.spec.n,
      latestType: batch.latest.type,
      events: batch.events.map((e) => e.object.spec.n),
      route: batch.route,
      signal: batch.signal,
    });
    return processor(batch);
  }, options);
  reactors.push(reactor);
  return { reactor, runs };
}

beforeEach(() => {
  clock = installFakeClock({ now: T0 });
});

afterEach(async () => {
  // Drop whatever a test left behind (queued runs, requeue timers) so nothing leaks into the next one;
  // the drain deadline is a timer, so the clock must move.
  await settle(Promise.all(reactors.splice(0).map((r) => r.stop(0))), 'the reactors to stop');
  clock.uninstall();
});

describe('coalescing events of one object', () => {
  test('1,000 rapid events for a slow object make far fewer runs, never overlapping, ending on the newest state', async () => {
    const tracker = new ConcurrencyTracker();
    const { reactor, runs } = reactorWith(async ({ uid }) => {
      tracker.enter(uid);
      await clock.sleep(20);
      tracker.leave(uid);
    });

    for (let n = 1; n <= 1_000; n++) {
      reactor.push(widgetEvent('a', n), 'route');
      if (n % 100 === 0) await clock.advanceAsync(5); // runs start and finish while events keep coming
    }
    await idle(reactor);

    expect(runs.length).toBeGreaterThan(1);
    expect(runs.length).toBeLessThan(50);
    expect(tracker.maxPerObject).toBe(1);
    expect(runs.at(-1)!.latest).toBe(1_000);
  });

  test('the raw events of successive runs, concatenated, are every event once and in order', async () => {
    const { reactor, runs } = reactorWith(async ({ events }) => {
      await clock.sleep(events.length % 3); // vary run length so batches differ in size
    });

    const pushed: number[] = [];
    for (let n = 1; n <= 300; n++) {
      reactor.push(widgetEvent('a', n), 'route');
      pushed.push(n);
      if (n % 7 === 0) await clock.advanceAsync(0);
      if (n % 50 === 0) await clock.advanceAsync(3);
    }
    await idle(reactor);

    expect(runs.length).toBeGreaterThan(1);
    expect(runs.flatMap((r) => r.events)).toEqual(pushed);
    for (const run of runs) expect(run.latest).toBe(run.events.at(-1));
  });

  test('an event arriving while its object runs causes exactly one follow-up run, which sees it', async () => {
    const firstRun = deferred();
    const { reactor, runs } = reactorWith(async () => {
      if (runs.length === 1) await firstRun.promise;
    });

    reactor.push(widgetEvent('a', 1), 'route');
    await clock.until(() => reactor.running === 1, 'the first run to start');
    reactor.push(widgetEvent('a', 2, { type: 'MODIFIED' }), 'route');
    await clock.advanceAsync(0);
    expect(runs).toHaveLength(1); // the follow-up waits for the first run to finish

    firstRun.resolve();
    await idle(reactor);

    expect(runs).toHaveLength(2);
    expect(runs[1]).toMatchObject({ uid: 'a', latest: 2, events: [2] });
  });

  test('only the newest maxEventsPerRun raw events are kept between runs; the newest state is never dropped', async () => {
    const firstRun = deferred();
    const { reactor, runs } = reactorWith(
      async () => {
        if (runs.length === 1) await firstRun.promise;
      },
      { maxEventsPerRun: 5 },
    );

    reactor.push(widgetEvent('a', 0), 'route');
    for (let n = 1; n <= 20; n++) reactor.push(widgetEvent('a', n), 'route');
    firstRun.resolve();
    await idle(reactor);

    expect(runs).toHaveLength(2);
    expect(runs[1]).toMatchObject({ latest: 20, events: [16, 17, 18, 19, 20] });
  });
});

describe('sharing the concurrency limit between objects', () => {
  test('different objects run in parallel up to the concurrency limit and never beyond it', async () => {
    const tracker = new ConcurrencyTracker();
    const { reactor, runs } = reactorWith(
      async ({ uid }) => {
        tracker.enter(uid);
        await clock.sleep(5);
        tracker.leave(uid);
      },
      { concurrency: 4 },
    );

    for (let i = 0; i < 30; i++) reactor.push(widgetEvent(`obj-${i}`, 1), 'route');
    await idle(reactor);

    expect(runs).toHaveLength(30);
    expect(tracker.max).toBe(4);
  });

  test('a live event for a new object is processed before a backlog of 2,000 listed objects queued earlier', async () => {
    const { reactor, runs } = reactorWith(() => clock.sleep(1), { concurrency: 2 });

    for (let i = 0; i < 2_000; i++)
      reactor.push(widgetEvent(`listed-${i}`, 1, { fromList: true }), 'route');
    await clock.until(() => runs.length >= 10, 'the backlog to get going', { stepMs: 1 });
    reactor.push(widgetEvent('created', 1, { type: 'ADDED', fromList: false }), 'route');
    await idle(reactor);

    expect(runs).toHaveLength(2_001);
    const index = runs.findIndex((r) => r.uid === 'created');
    expect(index).toBeGreaterThanOrEqual(10);
    expect(index).toBeLessThan(50);
  });

  test('a queued backlog object that receives a live event is promoted ahead of the rest of the backlog', async () => {
    const blocker = deferred();
    const { reactor, runs } = reactorWith(
      async ({ uid }) => {
        if (uid === 'blocker') await blocker.promise;
      },
      { concurrency: 1 },
    );

    reactor.push(widgetEvent('blocker', 1), 'route');
    for (let i = 0; i < 100; i++)
      reactor.push(widgetEvent(`listed-${i}`, 1, { fromList: true }), 'route');
    reactor.push(widgetEvent('listed-60', 2, { fromList: false }), 'route');
    blocker.resolve();
    await idle(reactor);

    expect(runs.map((r) => r.uid).slice(0, 3)).toEqual(['blocker', 'listed-60', 'listed-0']);
    expect(runs[1]).toMatchObject({ latest: 2, events: [1, 2] });
    expect(runs).toHaveLength(101); // promoted, not duplicated
  });
});

describe('failing processors', () => {
  test('a processor that throws (an Error, a string, undefined) does not stop the reactor', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
    const tracker = new ConcurrencyTracker();
    const { reactor, runs } = reactorWith(
      async ({ uid, latest }) => {
        if (latest.object.spec.n === 1) {
          if (uid === 'error') throw new Error('boom');
          if (uid === 'string') throw 'boom';
          if (uid === 'undefined') throw undefined;
        }
        tracker.enter(uid);
        await clock.sleep(5);
        tracker.leave(uid);
      },
      { concurrency: 2, logger },
    );

    for (const uid of ['error', 'string', 'undefined']) reactor.push(widgetEvent(uid, 1), 'route');
    await idle(reactor);
    expect(lines.filter((l) => l.includes('object processing failed unexpectedly'))).toHaveLength(
      3,
    );

    // The same objects and others are still processed, within the same concurrency limit.
    for (const uid of ['error', 'string', 'undefined']) reactor.push(widgetEvent(uid, 2), 'route');
    for (let i = 0; i < 10; i++) reactor.push(widgetEvent(`other-${i}`, 1), 'route');
    await idle(reactor);

    const laterRuns = runs.slice(3);
    expect(laterRuns.map((r) => r.uid).sort()).toEqual(
      [
        'error',
        'string',
        'undefined',
        ...Array.from({ length: 10 }, (_, i) => `other-${i}`),
      ].sort(),
    );
    expect(tracker.max).toBe(2);
    expect(reactor.activeObjects).toBe(0);
  });

  test('a processor that throws before returning a promise does not stop the reactor', async () => {
    let calls = 0;
    const reactor = new Reactor<Widget, string>((batch) => {
      calls += 1;
      if (batch.latest.object.spec.n === 1) throw new Error('thrown synchronously');
      return Promise.resolve();
    });
    reactors.push(reactor);

    reactor.push(widgetEvent('a', 1), 'route');
    await idle(reactor);
    reactor.push(widgetEvent('a', 2), 'route');
    await idle(reactor);

    expect(calls).toBe(2);
    expect(reactor.activeObjects).toBe(0);
    expect(reactor.running).toBe(0);
  });
});

describe('a failing watch stream', () => {
  test('is logged with its message and handed to onError; events before it were processed', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
    const { reactor, runs } = reactorWith(async () => undefined, { logger });
    const events = new Subject<WatchEvent<Widget>>();
    const failures: unknown[] = [];

    reactor.consume(events, 'route', undefined, (error) => failures.push(error));
    events.next(widgetEvent('a', 1));
    const failure = new Error('the heap cannot hold the listing');
    events.error(failure);
    await idle(reactor);

    expect(runs.map((r) => r.uid)).toEqual(['a']);
    expect(failures).toEqual([failure]);
    expect(
      lines.some((line) => line.includes('watch stream failed: the heap cannot hold the listing')),
    ).toBe(true);
  });
});

describe('keeping state only for objects with work', () => {
  test('state is freed once every object is processed and idle, including after DELETED events', async () => {
    const { reactor, runs } = reactorWith(() => clock.sleep(1), { concurrency: 3 });

    for (let i = 0; i < 50; i++) {
      reactor.push(widgetEvent(`obj-${i}`, 1, { type: 'ADDED' }), 'route');
      reactor.push(widgetEvent(`obj-${i}`, 2), 'route');
      if (i % 2 === 0) reactor.push(widgetEvent(`obj-${i}`, 3, { type: 'DELETED' }), 'route');
    }
    expect(reactor.activeObjects).toBe(50);
    await idle(reactor);

    expect(reactor.activeObjects).toBe(0);
    expect(reactor.queued).toBe(0);
    expect(reactor.running).toBe(0);
    expect(runs.filter((r) => r.latestType === 'DELETED')).toHaveLength(25);
  });

  test('events without a uid are ignored', async () => {
    const { reactor, runs } = reactorWith();
    const event = widgetEvent('a', 1);
    reactor.push(
      { ...event, object: { ...event.object, metadata: { ...event.object.metadata, uid: '' } } },
      'route',
    );
    await idle(reactor);

    expect(runs).toHaveLength(0);
    expect(reactor.activeObjects).toBe(0);
  });
});

describe('requeueing', () => {
  test('requeueAfterMs runs the object again after the delay with its latest state', async () => {
    const { reactor, runs } = reactorWith(async () =>
      runs.length === 1 ? { requeueAfterMs: 50 } : undefined,
    );

    reactor.push(widgetEvent('a', 7), 'route');
    await idle(reactor);
    expect(runs).toHaveLength(1);
    expect(reactor.activeObjects).toBe(1); // kept while the re-run is pending

    await clock.advanceAsync(49);
    expect(runs).toHaveLength(1);
    await clock.advanceAsync(1);
    expect(runs).toHaveLength(2);
    await idle(reactor);

    expect(runs[1]).toMatchObject({ uid: 'a', latest: 7, route: 'route' });
    expect(reactor.activeObjects).toBe(0);
  });

  test('a requeue at high priority runs before live changes already waiting; at normal priority, after them', async () => {
    const order = async (priority: 'high' | 'normal') => {
      const hold = deferred();
      const { reactor, runs } = reactorWith(
        async (batch) => {
          if (batch.uid === 'blocker') await hold.promise;
          return batch.uid === 'x' && runs.filter((r) => r.uid === 'x').length === 1
            ? { requeueAfterMs: 20, priority }
            : undefined;
        },
        { concurrency: 1 },
      );
      reactor.push(widgetEvent('x', 1), 'route');
      await clock.until(() => runs.length === 1 && reactor.running === 0, 'the first run of x');
      reactor.push(widgetEvent('blocker', 1), 'route');
      reactor.push(widgetEvent('b', 1), 'route');
      await clock.until(() => reactor.queued === 2, "x's requeue waiting behind b", {
        stepMs: 1,
      });
      hold.resolve();
      await idle(reactor);
      return runs.map((r) => r.uid);
    };

    expect(await order('high')).toEqual(['x', 'blocker', 'x', 'b']);
    expect(await order('normal')).toEqual(['x', 'blocker', 'b', 'x']);
  });

  test('a requeued run carries no raw events, so event observers never see one twice', async () => {
    const { reactor, runs } = reactorWith(async () =>
      runs.length === 1 ? { requeueAfterMs: 20 } : undefined,
    );

    reactor.push(widgetEvent('a', 7), 'route');
    await clock.until(() => runs.length === 2, 'the re-run', { stepMs: 1 });

    expect(runs.map((r) => r.events)).toEqual([[7], []]);
  });

  test('a real event before the requeue delay runs at once, and no extra run follows at the original delay', async () => {
    const startedAt: number[] = [];
    const { reactor, runs } = reactorWith(async () => {
      startedAt.push(elapsed());
      return runs.length === 1 ? { requeueAfterMs: 300 } : undefined;
    });

    reactor.push(widgetEvent('a', 1), 'route');
    await clock.advanceAsync(50);
    reactor.push(widgetEvent('a', 2), 'route');
    await clock.advanceAsync(0);
    expect(startedAt).toEqual([0, 50]); // for the event, at once, not at the 300 ms requeue

    await clock.advanceAsync(500); // well past the requeue's original due time
    expect(startedAt).toEqual([0, 50]);
    expect(runs[1]).toMatchObject({ latest: 2, events: [2] });
    expect(reactor.activeObjects).toBe(0);
  });

  test('a DELETED object is not requeued', async () => {
    const { reactor, runs } = reactorWith(async () => ({ requeueAfterMs: 10 }));

    reactor.push(widgetEvent('a', 1, { type: 'DELETED' }), 'route');
    await idle(reactor);
    await clock.advanceAsync(1_000);

    expect(runs).toHaveLength(1);
    expect(reactor.activeObjects).toBe(0);
  });
});

describe('stopping', () => {
  test('stop drops runs not yet started, lets a run in progress finish before the deadline, and ignores later events', async () => {
    const inProgress = deferred();
    let finished = false;
    const { reactor, runs } = reactorWith(
      async ({ uid }) => {
        if (uid === 'a') {
          await inProgress.promise;
          finished = true;
        }
      },
      { concurrency: 1 },
    );

    reactor.push(widgetEvent('a', 1), 'route');
    reactor.push(widgetEvent('b', 1), 'route');
    reactor.push(widgetEvent('c', 1), 'route');
    expect(reactor.queued).toBe(2);

    let stoppedAt: number | undefined;
    void reactor.stop(2_000).then(() => (stoppedAt = elapsed()));
    clock.setTimeout(() => inProgress.resolve(), 20);
    await clock.advanceAsync(20);

    expect(stoppedAt).toBe(20); // when the run ended, not at the deadline
    expect(finished).toBe(true);
    expect(runs.map((r) => r.uid)).toEqual(['a']);
    expect(runs[0]!.signal.aborted).toBe(false);

    reactor.push(widgetEvent('d', 1), 'route');
    reactor.push(widgetEvent('a', 2), 'route');
    await idle(reactor);
    expect(runs).toHaveLength(1);
    expect(reactor.activeObjects).toBe(0);
  });

  test('stop gives up on a run that never finishes at the deadline, aborting its signal', async () => {
    const { reactor, runs } = reactorWith(() => new Promise<void>(() => undefined));

    reactor.push(widgetEvent('a', 1), 'route');
    expect(runs).toHaveLength(1);
    expect(runs[0]!.signal.aborted).toBe(false);

    let stoppedAt: number | undefined;
    void reactor.stop(200).then(() => (stoppedAt = elapsed()));
    await clock.advanceAsync(199);
    expect(stoppedAt).toBeUndefined();
    expect(runs[0]!.signal.aborted).toBe(false);
    await clock.advanceAsync(1);

    expect(stoppedAt).toBe(200);
    expect(runs[0]!.signal.aborted).toBe(true);
    expect(reactor.activeObjects).toBe(0);
  });

  test('stop cancels pending requeues', async () => {
    const { reactor, runs } = reactorWith(async () => ({ requeueAfterMs: 20 }));

    reactor.push(widgetEvent('a', 1), 'route');
    await idle(reactor);
    await settle(reactor.stop(100), 'the stop');
    await clock.advanceAsync(1_000);

    expect(runs).toHaveLength(1);
  });
});

describe('consuming a watch stream', () => {
  test('consume feeds object events with their route and calls onSynced for SYNCED markers', async () => {
    const { reactor, runs } = reactorWith();
    const stream = new Subject<WatchEvent<Widget>>();
    let synced = 0;
    reactor.consume(stream, 'widgets', () => (synced += 1));

    stream.next(widgetEvent('a', 1, { type: 'ADDED', fromList: true }));
    stream.next({ type: 'SYNCED' });
    stream.next(widgetEvent('b', 1, { type: 'ADDED' }));
    await idle(reactor);

    expect(synced).toBe(1);
    expect(runs.map((r) => [r.uid, r.route])).toEqual([
      ['a', 'widgets'],
      ['b', 'widgets'],
    ]);
  });

  test('objects of the initial listing beyond the head start wait until the listing is complete, then run in listing order', async () => {
    const { reactor, runs } = reactorWith(async () => undefined, { maxRunsWhileListing: 2 });
    const stream = new Subject<WatchEvent<Widget>>();
    reactor.consume(stream, 'widgets');

    for (const uid of ['a', 'b', 'c', 'd'])
      stream.next(widgetEvent(uid, 1, { type: 'ADDED', fromList: true }));
    await idle(reactor);
    expect(runs.map((r) => r.uid)).toEqual(['a', 'b']);

    stream.next({ type: 'SYNCED' });
    await idle(reactor);
    expect(runs.map((r) => r.uid)).toEqual(['a', 'b', 'c', 'd']);
  });

  test('a relisting after the initial one is not held: its objects run as they arrive', async () => {
    const { reactor, runs } = reactorWith(async () => undefined, { maxRunsWhileListing: 1 });
    const stream = new Subject<WatchEvent<Widget>>();
    let synced = 0;
    reactor.consume(stream, 'widgets', () => (synced += 1));
    stream.next({ type: 'SYNCED' });

    stream.next(widgetEvent('a', 2, { type: 'MODIFIED', fromList: true }));
    stream.next(widgetEvent('b', 2, { type: 'MODIFIED', fromList: true }));
    await idle(reactor);

    expect(runs.map((r) => r.uid)).toEqual(['a', 'b']);
    expect(synced).toBe(1);
  });

  test('stop unsubscribes from consumed streams', async () => {
    const { reactor, runs } = reactorWith();
    const stream = new Subject<WatchEvent<Widget>>();
    reactor.consume(stream, 'widgets');

    await settle(reactor.stop(100), 'the stop');
    expect(stream.observed).toBe(false);
    stream.next(widgetEvent('a', 1));
    expect(runs).toHaveLength(0);
  });
});

describe('metrics', () => {
  test('reactor_runs_total counts runs, reactor_coalesced_events_total counts events folded into a waiting or running object, and gauges read 0 when idle', async () => {
    const metrics = new MetricsRecorder();
    const release = deferred();
    const { reactor } = reactorWith(
      async ({ uid, latest }) => {
        if (uid === 'a' && latest.object.spec.n === 1) await release.promise;
      },
      { concurrency: 1, metrics },
    );

    reactor.push(widgetEvent('a', 1), 'route'); // runs at once: not coalesced
    reactor.push(widgetEvent('a', 2), 'route'); // arrives while a runs: coalesced
    reactor.push(widgetEvent('a', 3), 'route'); // coalesced
    reactor.push(widgetEvent('b', 1), 'route'); // waits for a free slot: not coalesced
    reactor.push(widgetEvent('b', 2), 'route'); // joins b's waiting run: coalesced

    expect(metrics.counter('reactor_runs_total')).toBe(1);
    expect(metrics.counter('reactor_coalesced_events_total')).toBe(3);
    expect(metrics.gauges.get('reactor_queue_depth')).toBe(1); // b; a's follow-up is queued when its run ends
    expect(metrics.gauges.get('reactor_running')).toBe(1);
    expect(metrics.gauges.get('reactor_objects')).toBe(2);

    release.resolve();
    await idle(reactor);

    expect(metrics.counter('reactor_runs_total')).toBe(3); // a, b (once for both events), a again
    expect(metrics.counter('reactor_coalesced_events_total')).toBe(3);
    expect(metrics.gauges.get('reactor_queue_depth')).toBe(0);
    expect(metrics.gauges.get('reactor_running')).toBe(0);
    expect(metrics.gauges.get('reactor_objects')).toBe(0);
  });

  test('reactor_queue_depth counts a requeued run that waits for a free slot', async () => {
    const metrics = new MetricsRecorder();
    const blocker = deferred();
    const { reactor, runs } = reactorWith(
      async ({ uid }) => {
        if (uid === 'a' && runs.length === 1) return { requeueAfterMs: 10 };
        if (uid === 'blocker') await blocker.promise;
        return undefined;
      },
      { concurrency: 1, metrics },
    );

    reactor.push(widgetEvent('a', 1), 'route');
    reactor.push(widgetEvent('blocker', 1), 'route');
    await clock.until(
      () => runs.length === 2 && reactor.queued === 1,
      "a's re-run to wait behind the blocker",
      { stepMs: 1 },
    );

    expect(metrics.gauges.get('reactor_queue_depth')).toBe(1);
    expect(metrics.gauges.get('reactor_running')).toBe(1);

    blocker.resolve();
    await idle(reactor);
    expect(runs.map((r) => r.uid)).toEqual(['a', 'blocker', 'a']);
    expect(metrics.gauges.get('reactor_queue_depth')).toBe(0);
  });
});
