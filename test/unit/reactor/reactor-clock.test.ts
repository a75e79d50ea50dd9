import {
  Reactor,
  stalledForMs,
  type ProcessResult,
  type ReactorOptions,
} from '../../../src/framework/reactor/reactor.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { deferred, widgetEvent, type Widget } from './helpers.js';

/**
 * The reactor on the shared fake clock (it drives `setTimeout` and `Date.now`): requeues days ahead,
 * and the progress `/healthz` reads to spot handlers that hold every slot.
 */

const T0 = Date.parse('2024-05-01T12:00:00.000Z');
const DAY_MS = 24 * 60 * 60 * 1000;
const MINUTE_MS = 60_000;

let clock: FakeClock;

const elapsed = (): number => clock.now() - T0;
const advanceTo = async (ms: number): Promise<void> => {
  await clock.advanceAsync(T0 + ms - clock.now());
};

const reactors: Reactor<Widget, string>[] = [];

/** A reactor whose run start times (ms since T0) are recorded per object. */
function reactorWith(
  processor: (uid: string, run: number) => Promise<ProcessResult>,
  options: ReactorOptions = {},
) {
  const runs: { uid: string; at: number }[] = [];
  const reactor = new Reactor<Widget, string>(async (batch) => {
    const run = runs.filter((r) => r.uid === batch.uid).length;
    runs.push({ uid: batch.uid, at: elapsed() });
    return processor(batch.uid, run);
  }, options);
  reactors.push(reactor);
  return { reactor, runs, stalledFor: () => stalledForMs(reactor.progress(), clock.now()) };
}

beforeEach(() => {
  clock = installFakeClock({ now: T0 });
});

afterEach(async () => {
  // Drop what a test left behind; the drain deadline is a (fake) timer, so the clock must move.
  const stopped = Promise.all(reactors.splice(0).map((r) => r.stop(0)));
  await clock.advanceAsync(1);
  await stopped;
  clock.uninstall();
});

describe('requeues longer than setTimeout allows (2^31-1 ms, about 24.8 days)', () => {
  test('a requeue 30 days ahead does not run within 29 days, and runs at day 30', async () => {
    const { reactor, runs } = reactorWith(async (_, run) =>
      run === 0 ? { requeueAfterMs: 30 * DAY_MS } : undefined,
    );
    reactor.push(widgetEvent('a', 1), 'r');
    // A bare setTimeout would fire after 1 ms: the re-run would come at once.
    await advanceTo(1_000);
    expect(runs.map((r) => r.at)).toEqual([0]);
    await advanceTo(29 * DAY_MS);
    expect(runs.map((r) => r.at)).toEqual([0]);
    await advanceTo(30 * DAY_MS);
    expect(runs.map((r) => r.at)).toEqual([0, 30 * DAY_MS]);
  });

  test('an object asking every run for a requeue 400 days ahead runs once per 400 days', async () => {
    const { reactor, runs } = reactorWith(async () => ({ requeueAfterMs: 400 * DAY_MS }));
    reactor.push(widgetEvent('a', 1), 'r');
    await advanceTo(1_000);
    expect(runs.map((r) => r.at)).toEqual([0]);
    await advanceTo(800 * DAY_MS);
    expect(runs.map((r) => r.at)).toEqual([0, 400 * DAY_MS, 800 * DAY_MS]);
  });

  test('an event before a far requeue runs the object at once and replaces the requeue', async () => {
    const { reactor, runs } = reactorWith(async (_, run) =>
      run === 0 ? { requeueAfterMs: 30 * DAY_MS } : undefined,
    );
    reactor.push(widgetEvent('a', 1), 'r');
    await advanceTo(DAY_MS);
    reactor.push(widgetEvent('a', 2), 'r');
    await advanceTo(60 * DAY_MS);
    expect(runs.map((r) => r.at)).toEqual([0, DAY_MS]);
  });

  test('the drain deadline of stop() is honoured when longer than setTimeout allows', async () => {
    const hung = deferred();
    const { reactor } = reactorWith(() => hung.promise.then(() => undefined));
    reactor.push(widgetEvent('a', 1), 'r');
    await advanceTo(1);
    let stoppedAt: number | undefined;
    void reactor.stop(30 * DAY_MS).then(() => (stoppedAt = elapsed()));
    await advanceTo(29 * DAY_MS);
    expect(stoppedAt).toBeUndefined();
    await advanceTo(31 * DAY_MS);
    expect(stoppedAt).toBe(30 * DAY_MS + 1);
    hung.resolve();
  });
});

describe('progress: spotting handlers that hold every slot', () => {
  test('an idle reactor is never stalled, however long ago its last run finished', async () => {
    const { reactor, stalledFor } = reactorWith(async () => undefined);
    reactor.push(widgetEvent('a', 1), 'r');
    await advanceTo(DAY_MS);
    expect(reactor.progress()).toMatchObject({ queued: 0, running: 0, lastCompletedAt: T0 });
    expect(stalledFor()).toBe(0);
  });

  test('work waiting behind a hung run is stalled for as long as it waits, and no longer once the run ends', async () => {
    const hung = deferred();
    const { reactor, runs, stalledFor } = reactorWith(
      (uid) => (uid === 'a' ? hung.promise.then(() => undefined) : Promise.resolve(undefined)),
      {
        concurrency: 1,
      },
    );
    reactor.push(widgetEvent('a', 1), 'r');
    await advanceTo(MINUTE_MS);
    expect(stalledFor()).toBe(0); // a long run alone, with nothing waiting, is no stall
    reactor.push(widgetEvent('b', 1), 'r');
    await advanceTo(6 * MINUTE_MS);
    expect(reactor.progress()).toMatchObject({ queued: 1, running: 1 });
    expect(stalledFor()).toBe(5 * MINUTE_MS);

    hung.resolve();
    await advanceTo(6 * MINUTE_MS + 1);
    expect(runs.map((r) => r.uid)).toEqual(['a', 'b']);
    expect(stalledFor()).toBe(0);
    expect(reactor.progress().lastCompletedAt).toBe(T0 + 6 * MINUTE_MS);
  });

  test('slow runs that keep finishing are not a stall, however long the queue', async () => {
    const { reactor, stalledFor } = reactorWith(() => clock.sleep(MINUTE_MS), { concurrency: 1 });
    for (let i = 0; i < 20; i += 1) reactor.push(widgetEvent(`o${i}`, 1), 'r');
    let worst = 0;
    for (let t = 0; t <= 15 * MINUTE_MS; t += 10_000) {
      await advanceTo(t);
      worst = Math.max(worst, stalledFor());
    }
    expect(reactor.progress().queued).toBeGreaterThan(0);
    expect(worst).toBeLessThanOrEqual(MINUTE_MS);
  });

  test('after a long idle time, work that has just started waiting is measured from when it started waiting', async () => {
    const hung = deferred();
    const { reactor, stalledFor } = reactorWith(
      (uid) => (uid === 'a' ? hung.promise.then(() => undefined) : Promise.resolve(undefined)),
      {
        concurrency: 1,
      },
    );
    reactor.push(widgetEvent('a', 1), 'r');
    await advanceTo(DAY_MS);
    reactor.push(widgetEvent('b', 1), 'r');
    await advanceTo(DAY_MS + 1_000);
    expect(stalledFor()).toBe(1_000);
    hung.resolve();
  });
});

describe('queue wait and retries as metrics', () => {
  test('reactor_queue_wait_seconds measures from queueing to the run starting', async () => {
    const metrics = new MetricsRecorder();
    const hung = deferred();
    const { reactor } = reactorWith(
      (uid) => (uid === 'a' ? hung.promise.then(() => undefined) : Promise.resolve(undefined)),
      { concurrency: 1, metrics },
    );
    reactor.push(widgetEvent('a', 1), 'r');
    reactor.push(widgetEvent('b', 1), 'r');
    await advanceTo(5_000);
    hung.resolve();
    await advanceTo(5_001);

    const waits = metrics.histograms.get('reactor_queue_wait_seconds');
    expect(waits?.count).toBe(2);
    expect(waits?.quantile(0)).toBe(0); // a started at once
    expect(waits?.quantile(1)).toBe(5); // b waited for a's slot
  });

  test('reactor_objects_retrying counts objects waiting to retry a failure, not periodic re-runs', async () => {
    const metrics = new MetricsRecorder();
    const { reactor } = reactorWith(
      async (uid, run) => {
        if (uid === 'failing' && run === 0) return { requeueAfterMs: 1_000, retry: true };
        if (uid === 'periodic') return { requeueAfterMs: 60_000 };
        return undefined;
      },
      { metrics },
    );
    reactor.push(widgetEvent('failing', 1), 'r');
    reactor.push(widgetEvent('periodic', 1), 'r');
    await advanceTo(10);
    expect(metrics.gauges.get('reactor_objects_retrying')).toBe(1);

    await advanceTo(1_010); // the retry ran and succeeded
    expect(metrics.gauges.get('reactor_objects_retrying')).toBe(0);
  });
});
