import type { ApiClient } from '../../../src/framework/api/api-client.js';
import { DaemonEngine } from '../../../src/framework/engines/daemons.js';
import { PermanentError, TemporaryError } from '../../../src/framework/intents/errors.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import { EventScope } from '../../../src/framework/posting/event-scope.js';
import type { EventPoster } from '../../../src/framework/posting/events.js';
import type { DaemonContext, DaemonSpec } from '../../../src/framework/intents/handler-specs.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { WIDGET_API_VERSION, widget, widgetResource } from '../../support/widget-objects.js';

/**
 * DaemonEngine on the shared fake clock (its default clock reads the global timers): backoffs,
 * delays and cancellation deadlines are exact, and a daemon's own waits run on it too.
 */

const T0 = Date.parse('2024-05-01T12:00:00.000Z');
const DAY_MS = 24 * 60 * 60 * 1000;
let clock: FakeClock;

/** Milliseconds since T0. */
const elapsed = (): number => clock.now() - T0;
/** Moves the fake clock to T0 + `ms`, running the timers due and the work they start. */
const advanceTo = async (ms: number): Promise<void> => {
  await clock.advanceAsync(T0 + ms - clock.now());
};
const aborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
/** Stops the engine, letting the fake clock run while daemons exit. */
const stop = async (engine: DaemonEngine): Promise<void> => {
  const stopped = engine.stopAll();
  await clock.advanceAsync(120_000);
  await stopped;
};

beforeEach(() => {
  clock = installFakeClock({ now: T0 });
});

afterEach(() => {
  clock.uninstall();
});

/** A request the engine itself sent (the daemons here send none of their own). */
interface SentRequest {
  method: string;
  path: string;
  body: unknown;
}

/** How the fake API answers a request: by default with the object as first observed. */
type Answer = (method: string, path: string) => unknown;

function engineWith(
  fn: (context: DaemonContext) => unknown,
  options: DaemonSpec['options'] = {},
  answer: Answer = () => widget(),
) {
  const posted: string[] = [];
  const sent: SentRequest[] = [];
  const poster = {
    post: (_o: KubeObject, _t: string, reason: string) => posted.push(reason),
  } as unknown as EventPoster;
  const metrics = new MetricsRecorder();
  // Answers every request with the object: enough for the results write, the one request the engine makes.
  const client = {
    request: (method: string, path: string, init: { body?: unknown } = {}) => {
      sent.push({ method, path, body: init.body });
      return Promise.resolve(answer(method, path));
    },
  } as unknown as ApiClient;
  const engine = new DaemonEngine({
    resource: widgetResource,
    client,
    daemons: [
      {
        kind: 'daemon',
        id: 'd',
        resource: { apiVersion: WIDGET_API_VERSION, name: widgetResource.plural },
        options,
        fn,
      },
    ],
    logger: silentLogger(),
    poster,
    metrics,
  });
  return { engine, posted, metrics, sent };
}

describe('daemons', () => {
  test('a daemon that returns is not restarted', async () => {
    let runs = 0;
    const { engine } = engineWith(async () => {
      runs += 1;
    });
    engine.observe(widget());
    await advanceTo(50);
    engine.observe(widget({ resourceVersion: '2' }));
    await advanceTo(600_000); // well past any restart backoff
    expect(runs).toBe(1);
    expect(engine.running).toBe(0);
    await stop(engine);
  });

  test('a daemon that throws is restarted with backoff, and an Event says so', async () => {
    const starts: number[] = [];
    const { engine, posted } = engineWith(
      async () => {
        starts.push(elapsed());
        if (starts.length < 3) throw new Error('lost connection');
      },
      { backoff: 0.05 },
    );
    engine.observe(widget());
    await advanceTo(1_000);
    expect(starts).toEqual([0, 50, 100]);
    expect(posted).toEqual(['DaemonFailed', 'DaemonFailed']);
    await stop(engine);
  });

  test('a PermanentError ends the daemon for good, with an Event saying so', async () => {
    let runs = 0;
    const { engine, posted } = engineWith(
      async () => {
        runs += 1;
        throw new PermanentError('the spec can never work');
      },
      { backoff: 0.05 },
    );
    engine.observe(widget());
    await advanceTo(600_000);
    expect(runs).toBe(1);
    expect(posted).toEqual(['DaemonFailed']);
    await stop(engine);
  });

  test('a TemporaryError restarts the daemon after its delay', async () => {
    const starts: number[] = [];
    const { engine } = engineWith(async () => {
      starts.push(elapsed());
      if (starts.length === 1) throw new TemporaryError('later', { delay: 0.2 });
    });
    engine.observe(widget());
    await advanceTo(199);
    expect(starts).toEqual([0]);
    await advanceTo(200);
    expect(starts).toEqual([0, 200]);
    await stop(engine);
  });

  test('stopping resolves `stopped` at once and aborts `signal` after the cancellation backoff', async () => {
    const seen: string[] = [];
    const { engine } = engineWith(
      async ({ stopped, signal }) => {
        await stopped;
        seen.push(`stopped at ${elapsed()}, aborted=${signal.aborted}`);
        await aborted(signal);
        seen.push(`aborted at ${elapsed()}`);
      },
      { cancellationBackoff: 0.1 },
    );
    engine.observe(widget());
    await advanceTo(20);
    let stoppedAt: number | undefined;
    void engine.stopObject('uid-1').then(() => (stoppedAt = elapsed()));
    await advanceTo(119);
    expect(seen).toEqual(['stopped at 20, aborted=false']);
    await advanceTo(120);
    expect(seen).toEqual(['stopped at 20, aborted=false', 'aborted at 120']);
    expect(stoppedAt).toBe(120);
  });

  test('a daemon that ignores its stop is abandoned after the cancellation timeout, with a warning Event', async () => {
    const { engine, posted } = engineWith(() => new Promise(() => undefined), {
      cancellationTimeout: 0.2,
    });
    engine.observe(widget());
    let stoppedAt: number | undefined;
    void engine.stopObject('uid-1').then(() => (stoppedAt = elapsed()));
    await advanceTo(199);
    expect(stoppedAt).toBeUndefined();
    expect(posted).toEqual([]);
    await advanceTo(200);
    expect(stoppedAt).toBe(200);
    expect(posted).toEqual(['DaemonAbandoned']);
  });

  test('an abandoned daemon counts as still running until it ends, so its object is not handed on', async () => {
    let finish: () => void = () => undefined;
    const { engine } = engineWith(() => new Promise<void>((resolve) => (finish = resolve)), {
      cancellationTimeout: 0.2,
    });
    engine.observe(widget());
    expect(engine.stillRunning('uid-1')).toBe(false);
    const stopped = engine.stopObject('uid-1');
    await advanceTo(200);
    await stopped;
    expect(engine.stillRunning('uid-1')).toBe(true);
    finish();
    await advanceTo(201);
    expect(engine.stillRunning('uid-1')).toBe(false);
  });

  test('a daemon that stops when asked is not still running', async () => {
    const { engine } = engineWith(({ signal }) => aborted(signal));
    engine.observe(widget());
    const stopped = engine.stopObject('uid-1');
    await advanceTo(10);
    await stopped;
    expect(engine.stillRunning('uid-1')).toBe(false);
  });

  test('an object being deleted stops its daemon; a stopped object does not start it again', async () => {
    let runs = 0;
    const { engine } = engineWith(async ({ signal }) => {
      runs += 1;
      await aborted(signal);
    });
    engine.observe(widget());
    await advanceTo(20);
    engine.observe(widget({ deleting: true }));
    await advanceTo(600_000);
    expect(engine.running).toBe(0);
    expect(runs).toBe(1);
  });

  test('the context reads the newest state of the object each time', async () => {
    const sizes: unknown[] = [];
    const { engine } = engineWith(async (context) => {
      sizes.push(context.spec.size);
      await clock.sleep(50);
      sizes.push(context.spec.size);
      await aborted(context.signal);
    });
    engine.observe(widget());
    await advanceTo(10);
    engine.observe(widget({ resourceVersion: '2', spec: { size: 5 } }));
    await advanceTo(90);
    await stop(engine);
    expect(sizes).toEqual([1, 5]);
  });

  test("the context's events post about the object through the operator whose work runs the daemon", async () => {
    const posted: string[] = [];
    const scope = new EventScope({
      post: (object, type, reason, message) =>
        posted.push(`${object.metadata?.name} ${type} ${reason}: ${message}`),
    });
    scope.activate();
    const { engine } = engineWith(async (context) => {
      context.events.info('Watching', 'started');
      await aborted(context.signal);
    });
    scope.run(() => engine.observe(widget({ name: 'w' })));
    await advanceTo(20);
    await stop(engine);
    expect(posted).toEqual(['w Normal Watching: started']);
  });
});

describe('daemons: results delivery', () => {
  test('what a daemon returns when it ends by itself is stored at status[<daemon id>] in one status write, on the version it saw', async () => {
    const { engine, sent } = engineWith(() => ({ migrated: 12 }));
    engine.observe(widget({ resourceVersion: '7' }));
    await advanceTo(50);
    expect(sent).toEqual([
      {
        method: 'PATCH',
        path: '/apis/test.konductor.dev/v1/namespaces/default/widgets/w1/status',
        body: { status: { d: { migrated: 12 } }, metadata: { resourceVersion: '7' } },
      },
    ]);
    await stop(engine);
  });

  test('a daemon returning what status[<daemon id>] already holds, or nothing, makes no request', async () => {
    const same = engineWith(() => ({ migrated: 12 }));
    same.engine.observe(widget({ status: { d: { migrated: 12 } } }));
    const nothing = engineWith(() => undefined);
    nothing.engine.observe(widget());
    await advanceTo(50);
    expect([...same.sent, ...nothing.sent]).toEqual([]);
    await Promise.all([stop(same.engine), stop(nothing.engine)]);
  });

  test('a daemon that ends because it was asked to stop has its return value ignored', async () => {
    const { engine, sent } = engineWith(async ({ stopped }) => {
      await stopped;
      return { interrupted: true };
    });
    engine.observe(widget());
    await advanceTo(20);
    const stopping = engine.stopObject('uid-1');
    await clock.advanceAsync(120_000);
    await stopping;
    expect(sent).toEqual([]);
  });

  test('a value that is not JSON is not stored and is posted as a DaemonResultNotStored Event', async () => {
    const { engine, sent, posted } = engineWith(() => Symbol('done'));
    engine.observe(widget());
    await advanceTo(50);
    expect(sent).toEqual([]);
    expect(posted).toEqual(['DaemonResultNotStored']);
    await stop(engine);
  });
});

describe("daemons: the context shows the daemon's own writes", () => {
  const statusPath = '/apis/test.konductor.dev/v1/namespaces/default/widgets/w1/status';

  /** A daemon that reads `status.phase`, writes its status, reads it, waits for `next`, and reads it once more. */
  function phasesAround(next: Promise<void>, phases: unknown[]) {
    return async (context: DaemonContext): Promise<void> => {
      phases.push(context.status?.phase);
      await context.client.request('PATCH', statusPath, { body: { status: { phase: 'Running' } } });
      phases.push(context.status?.phase);
      await next;
      phases.push(context.status?.phase);
      await aborted(context.signal);
    };
  }

  test('a write to its own object through ctx.client shows in ctx.body until the watch delivers a later state', async () => {
    let advance: () => void = () => undefined;
    const next = new Promise<void>((resolve) => (advance = resolve));
    const phases: unknown[] = [];
    const { engine } = engineWith(phasesAround(next, phases), {}, () =>
      widget({ resourceVersion: '2', status: { phase: 'Running' } }),
    );
    engine.observe(widget());
    await advanceTo(20);
    engine.observe(widget({ resourceVersion: '3', status: { phase: 'Failed' } }));
    advance();
    await advanceTo(40);
    await stop(engine);
    expect(phases).toEqual([undefined, 'Running', 'Failed']);
  });

  test("the answer to a write of another object leaves the daemon's object as watched", async () => {
    const phases: unknown[] = [];
    const { engine } = engineWith(phasesAround(Promise.resolve(), phases), {}, () =>
      widget({ uid: 'uid-2', resourceVersion: '2', status: { phase: 'Running' } }),
    );
    engine.observe(widget());
    await advanceTo(20);
    await stop(engine);
    expect(phases).toEqual([undefined, undefined, undefined]);
  });
});

describe('daemons: delays, restarts and filters', () => {
  test('the initial delay holds the start of the daemon', async () => {
    const starts: number[] = [];
    const { engine } = engineWith(
      async ({ signal }) => {
        starts.push(elapsed());
        await aborted(signal);
      },
      { initialDelay: 'PT5S' },
    );
    engine.observe(widget());
    await advanceTo(4_999);
    expect(starts).toEqual([]);
    await advanceTo(5_000);
    expect(starts).toEqual([5_000]);
    await stop(engine);
  });

  test('a daemon stopped during its initial delay never starts', async () => {
    let runs = 0;
    const { engine } = engineWith(
      () => {
        runs += 1;
      },
      { initialDelay: 60 },
    );
    engine.observe(widget());
    await advanceTo(1_000);
    await engine.stopObject('uid-1'); // no clock advance needed: the delay ends on the stop
    await advanceTo(120_000);
    expect(runs).toBe(0);
  });

  test('the initial delay applies to the first start only, not to restarts after a failure', async () => {
    const starts: number[] = [];
    const { engine } = engineWith(
      async ({ signal }) => {
        starts.push(elapsed());
        if (starts.length === 1) throw new Error('crashed');
        await aborted(signal);
      },
      { initialDelay: 10, backoff: 2 },
    );
    engine.observe(widget());
    await advanceTo(30_000);
    expect(starts).toEqual([10_000, 12_000]);
    await stop(engine);
  });

  test('a daemon that keeps throwing is restarted after 1 s, doubling each time up to 60 s', async () => {
    const starts: number[] = [];
    const { engine } = engineWith(() => {
      starts.push(elapsed());
      throw new Error('connection refused');
    });
    engine.observe(widget());
    await advanceTo(200_000);
    const gaps = starts.slice(1).map((start, i) => start - starts[i]!);
    expect(gaps).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
    await stop(engine);
  });

  test('the retry count tells the daemon how many times it was restarted', async () => {
    const retries: number[] = [];
    const { engine } = engineWith(
      ({ retry }) => {
        retries.push(retry);
        if (retries.length < 3) throw new Error('flaky');
      },
      { backoff: 1 },
    );
    engine.observe(widget());
    await advanceTo(10_000);
    expect(retries).toEqual([0, 1, 2]);
    await stop(engine);
  });

  test('runs are counted as handler runs: each restart after a failure as a retry, an end (returned or stopped) as a success', async () => {
    let runs = 0;
    const { engine, metrics } = engineWith(
      async ({ signal }) => {
        runs += 1;
        if (runs <= 2) throw new Error('crashed');
        await aborted(signal);
        throw new Error('aborted'); // how an aborted request ends
      },
      { backoff: 1 },
    );
    engine.observe(widget());
    await advanceTo(5_000);
    expect(metrics.counter('handler_runs_total', { handler: 'd', result: 'retry' })).toBe(2);
    expect(metrics.counter('handler_runs_total', { handler: 'd', result: 'success' })).toBe(0);
    await stop(engine);
    expect(metrics.counter('handler_runs_total', { handler: 'd', result: 'retry' })).toBe(2);
    expect(metrics.counter('handler_runs_total', { handler: 'd', result: 'success' })).toBe(1);
  });

  test('a daemon starts when the object starts matching its filters and stops when it stops matching', async () => {
    const life: string[] = [];
    const { engine } = engineWith(
      async ({ signal }) => {
        life.push(`start ${elapsed()}`);
        await aborted(signal);
        life.push(`stop ${elapsed()}`);
      },
      { labels: { tier: 'gold' } },
    );
    engine.observe(widget());
    await advanceTo(1_000);
    expect(life).toEqual([]);
    expect(engine.running).toBe(0);

    engine.observe(widget({ labels: { tier: 'gold' } }));
    await advanceTo(2_000);
    expect(life).toEqual(['start 1000']);
    expect(engine.running).toBe(1);

    engine.observe(widget({ labels: { tier: 'silver' } }));
    await advanceTo(3_000);
    expect(life).toEqual(['start 1000', 'stop 2000']);
    expect(engine.running).toBe(0);
    await stop(engine);
  });

  test('a daemon that matches again while its previous instance is still exiting starts only once that instance exited', async () => {
    const life: string[] = [];
    let active = 0;
    let mostAtOnce = 0;
    const { engine } = engineWith(
      async ({ signal }) => {
        active += 1;
        mostAtOnce = Math.max(mostAtOnce, active);
        life.push(`start ${elapsed()}`);
        await aborted(signal);
        await new Promise((resolve) => setTimeout(resolve, 3_000)); // a slow, orderly shutdown
        life.push(`exit ${elapsed()}`);
        active -= 1;
      },
      { labels: { tier: 'gold' } },
    );
    engine.observe(widget({ labels: { tier: 'gold' } }));
    await advanceTo(500);
    engine.observe(widget());
    await advanceTo(1_000);
    engine.observe(widget({ labels: { tier: 'gold' } }));
    await advanceTo(5_000);
    expect(life).toEqual(['start 0', 'exit 3500', 'start 3500']);
    expect(mostAtOnce).toBe(1);
    await stop(engine);
  });

  test('stopping an object waits for its daemon that is still exiting after a filter mismatch', async () => {
    let exitedAt: number | undefined;
    const { engine } = engineWith(
      async ({ signal }) => {
        await aborted(signal);
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        exitedAt = elapsed();
      },
      { labels: { tier: 'gold' } },
    );
    engine.observe(widget({ labels: { tier: 'gold' } }));
    await advanceTo(500);
    engine.observe(widget());
    let stoppedAt: number | undefined;
    void engine.stopObject('uid-1').then(() => (stoppedAt = elapsed()));
    await advanceTo(3_000);
    expect(stoppedAt).toBeUndefined();
    await advanceTo(4_000);
    expect(exitedAt).toBe(3_500);
    expect(stoppedAt).toBe(3_500);
  });

  test('a backoff longer than setTimeout allows (30 days) restarts the daemon after 30 days, not in a loop', async () => {
    const starts: number[] = [];
    const { engine } = engineWith(
      () => {
        starts.push(elapsed());
        throw new Error('quota exhausted');
      },
      { backoff: 30 * 24 * 3600 },
    );
    engine.observe(widget());
    await advanceTo(1_000);
    expect(starts).toEqual([0]);
    await advanceTo(29 * DAY_MS);
    expect(starts).toEqual([0]);
    await advanceTo(30 * DAY_MS);
    expect(starts).toEqual([0, 30 * DAY_MS]);
    await stop(engine);
  });

  test('a TemporaryError delay of 400 days restarts the daemon after 400 days', async () => {
    const starts: number[] = [];
    const { engine } = engineWith(async ({ signal }) => {
      starts.push(elapsed());
      if (starts.length === 1)
        throw new TemporaryError('come back next year', { delay: 400 * 24 * 3600 });
      await aborted(signal);
    });
    engine.observe(widget());
    await advanceTo(399 * DAY_MS);
    expect(starts).toEqual([0]);
    await advanceTo(400 * DAY_MS);
    expect(starts).toEqual([0, 400 * DAY_MS]);
    await stop(engine);
  });

  test.each([
    [
      'throw undefined',
      (): never => {
        throw undefined;
      },
    ],
    ['Promise.reject()', (): Promise<never> => Promise.reject()],
  ])('%s is a failure: counted as a retry, posted, and the daemon restarted', async (_, fail) => {
    const starts: number[] = [];
    const { engine, posted, metrics } = engineWith(
      async ({ signal }) => {
        starts.push(elapsed());
        if (starts.length === 1) return fail();
        await aborted(signal);
      },
      { backoff: 2 },
    );
    engine.observe(widget());
    await advanceTo(5_000);
    expect(starts).toEqual([0, 2_000]);
    expect(posted).toEqual(['DaemonFailed']);
    expect(metrics.counter('handler_runs_total', { handler: 'd', result: 'retry' })).toBe(1);
    await stop(engine);
  });
});
