import type { ApiClient } from '../../../src/framework/api/api-client.js';
import {
  on,
  PermanentError,
  Registry,
  StartupError,
  TemporaryError,
  type ActivityContext,
} from '../../../src/framework/index.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import {
  OperatorActivities,
  startupRetry,
} from '../../../src/framework/runtime/operator-activities.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';

let clock: FakeClock;
beforeEach(() => {
  clock = installFakeClock({ now: '2026-01-01T00:00:00Z' });
});
afterEach(() => clock.uninstall());

function activitiesOf(registry: Registry, memo: Record<string, unknown> = {}): OperatorActivities {
  return new OperatorActivities(() => registry.activities, {
    client: {} as ApiClient,
    logger: silentLogger(),
    memo,
    clock,
  });
}

/** Settles `promise` while moving the fake clock on in steps; returns its outcome. */
async function settle<T>(
  promise: Promise<T>,
  stepMs = 500,
  maxMs = 600_000,
): Promise<{ value?: T; error?: unknown }> {
  let outcome: { value?: T; error?: unknown } | undefined;
  promise.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  for (let waited = 0; !outcome && waited <= maxMs; waited += stepMs)
    await clock.advanceAsync(stepMs);
  if (!outcome) throw new Error('did not settle');
  return outcome;
}

describe('startup retries (a pure decision)', () => {
  test('a PermanentError gives up at once', () => {
    expect(startupRetry(new PermanentError('no license'), 1, 0, {})).toEqual({
      giveUp: 'no license',
    });
  });

  test('by default an error is retried after 1 s doubling per attempt, up to 60 s', () => {
    expect(
      [1, 2, 3, 7, 20].map((attempt) => startupRetry(new Error('down'), attempt, 0, {})),
    ).toEqual([
      { retryInMs: 1_000 },
      { retryInMs: 2_000 },
      { retryInMs: 4_000 },
      { retryInMs: 60_000 },
      { retryInMs: 60_000 },
    ]);
  });

  test('backoff sets the delay and a TemporaryError brings its own', () => {
    expect(startupRetry(new Error('down'), 3, 0, { backoff: 7 })).toEqual({ retryInMs: 7_000 });
    expect(startupRetry(new TemporaryError('later', { delay: 2 }), 3, 0, { backoff: 7 })).toEqual({
      retryInMs: 2_000,
    });
  });

  test('retries counts attempts in all: the Nth failure is final', () => {
    expect(startupRetry(new Error('down'), 2, 0, { retries: 3 })).toEqual({ retryInMs: 2_000 });
    expect(startupRetry(new Error('down'), 3, 0, { retries: 3 })).toEqual({
      giveUp: 'gave up after 3 attempt(s): down',
    });
  });

  test('timeout gives up when the next attempt would start past it', () => {
    expect(startupRetry(new Error('down'), 2, 8_000, { timeout: 10, backoff: 1 })).toEqual({
      retryInMs: 1_000,
    });
    expect(startupRetry(new Error('down'), 2, 9_500, { timeout: 10, backoff: 1 })).toEqual({
      giveUp: 'ran past its timeout of 10 s (2 attempt(s)): down',
    });
  });
});

describe('startup handlers', () => {
  test('run in declaration order, each receiving the operator memo, and startup completes', async () => {
    const order: string[] = [];
    class Lifecycle {
      @on.startup()
      async first({ memo }: ActivityContext) {
        order.push('first');
        memo.pool = 'connected';
      }

      @on.startup({ id: 'second' })
      async second({ memo }: ActivityContext) {
        order.push(`second saw ${String(memo.pool)}`);
      }
    }
    const memo: Record<string, unknown> = {};
    const activities = activitiesOf(new Registry().addClass(Lifecycle), memo);
    expect(await settle(activities.startup())).toEqual({ value: true });
    expect(order).toEqual(['first', 'second saw connected']);
    expect(activities.startupDone).toBe(true);
  });

  test('/readyz is unready while they run, and says which one stopped the start', async () => {
    class Lifecycle {
      @on.startup({ retries: 2, backoff: 10 })
      async connect() {
        throw new Error('connection refused');
      }
    }
    const activities = activitiesOf(new Registry().addClass(Lifecycle));
    const running = activities.startup();
    await clock.advanceAsync(1_000);
    expect(activities.readiness()).toEqual({ ok: false, reason: 'startup handlers are running' });
    await settle(running);
    expect(activities.readiness()).toEqual({
      ok: false,
      reason:
        'startup handler Lifecycle.connect failed, so the operator does not start: gave up after 2 attempt(s): connection refused',
    });
  });

  test('an error is retried with backoff until the handler succeeds', async () => {
    const attempts: Array<{ at: number; retry: number }> = [];
    const start = clock.now();
    class Lifecycle {
      @on.startup({ backoff: 3 })
      async connect({ retry }: ActivityContext) {
        attempts.push({ at: clock.now() - start, retry });
        if (attempts.length < 3) throw new Error('database not reachable');
      }
    }
    expect(await settle(activitiesOf(new Registry().addClass(Lifecycle)).startup(), 100)).toEqual({
      value: true,
    });
    expect(attempts).toEqual([
      { at: 0, retry: 0 },
      { at: 3_000, retry: 1 },
      { at: 6_000, retry: 2 },
    ]);
  });

  test('a PermanentError stops the start with a StartupError naming the handler; later handlers do not run', async () => {
    let laterRan = false;
    class Lifecycle {
      @on.startup()
      async license() {
        throw new PermanentError('no license key in LICENSE_KEY');
      }

      @on.startup()
      async later() {
        laterRan = true;
      }
    }
    const { error } = await settle(activitiesOf(new Registry().addClass(Lifecycle)).startup());
    expect(error).toBeInstanceOf(StartupError);
    expect(error).toMatchObject({
      handler: 'Lifecycle.license',
      message:
        'startup handler Lifecycle.license failed, so the operator does not start: no license key in LICENSE_KEY',
    });
    expect(laterRan).toBe(false);
  });

  test('used-up retries stop the start, with the last error', async () => {
    let attempts = 0;
    class Lifecycle {
      @on.startup({ retries: 3, backoff: 1 })
      async connect() {
        attempts++;
        throw new Error('connection refused');
      }
    }
    const { error } = await settle(activitiesOf(new Registry().addClass(Lifecycle)).startup());
    expect(attempts).toBe(3);
    expect((error as Error).message).toBe(
      'startup handler Lifecycle.connect failed, so the operator does not start: gave up after 3 attempt(s): connection refused',
    );
  });

  test('an attempt running past timeout has its signal aborted and stops the start', async () => {
    let signal: AbortSignal | undefined;
    class Lifecycle {
      @on.startup({ timeout: 5 })
      async hang(context: ActivityContext) {
        signal = context.signal;
        await new Promise(() => undefined);
      }
    }
    const { error } = await settle(activitiesOf(new Registry().addClass(Lifecycle)).startup());
    expect(signal?.aborted).toBe(true);
    expect((error as Error).message).toBe(
      'startup handler Lifecycle.hang failed, so the operator does not start: timed out after 5 s (its timeout option)',
    );
  });

  test('abort() during the retry wait ends the startup as not completed, without another attempt', async () => {
    let attempts = 0;
    class Lifecycle {
      @on.startup({ backoff: 60 })
      async connect() {
        attempts++;
        throw new Error('down');
      }
    }
    const activities = activitiesOf(new Registry().addClass(Lifecycle));
    const running = activities.startup();
    await clock.advanceAsync(1_000);
    activities.abort();
    expect(await settle(running)).toEqual({ value: false });
    expect(attempts).toBe(1);
    expect(activities.startupDone).toBe(false);
  });
});

describe('cleanup handlers', () => {
  class Lifecycle {
    readonly calls: string[] = [];

    @on.startup()
    async start() {}

    @on.cleanup()
    async failing() {
      this.calls.push('failing');
      throw new Error('flush failed');
    }

    @on.cleanup({ timeout: 2 })
    async slow({ signal }: ActivityContext) {
      this.calls.push('slow');
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      this.calls.push('slow aborted');
    }

    @on.cleanup()
    async last() {
      this.calls.push('last');
    }
  }

  test('run in order once startup completed; an error or a timeout is logged and the next one still runs', async () => {
    const instance = new Lifecycle();
    const activities = activitiesOf(new Registry().addInstance(instance));
    await settle(activities.startup());
    expect(await settle(activities.cleanup(30_000))).toEqual({ value: undefined });
    expect(instance.calls).toEqual(['failing', 'slow', 'slow aborted', 'last']);
  });

  test('run once only, and not at all when startup did not complete', async () => {
    const instance = new Lifecycle();
    const activities = activitiesOf(new Registry().addInstance(instance));
    await settle(activities.cleanup(30_000));
    expect(instance.calls).toEqual([]);
    await settle(activities.startup());
    await settle(activities.cleanup(30_000));
    await settle(activities.cleanup(30_000));
    expect(instance.calls.filter((call) => call === 'last')).toHaveLength(1);
  });

  test('never run past the stop budget: a handler without its own timeout is cut at what is left', async () => {
    let aborted = false;
    class Hanging {
      @on.startup()
      async start() {}

      @on.cleanup()
      async hang({ signal }: ActivityContext) {
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
        aborted = true;
      }
    }
    const activities = activitiesOf(new Registry().addClass(Hanging));
    await settle(activities.startup());
    const started = clock.now();
    let doneAfter: number | undefined;
    void activities.cleanup(3_000).then(() => (doneAfter = clock.now() - started));
    await clock.advanceAsync(2_999);
    expect(aborted).toBe(false);
    await clock.advanceAsync(1);
    expect(aborted).toBe(true);
    expect(doneAfter).toBe(3_000);
  });
});

describe('probe handlers', () => {
  function probing(register: (registry: Registry) => void): OperatorActivities {
    const registry = new Registry();
    registry.activity('startup', () => undefined, { id: 'start' });
    register(registry);
    return activitiesOf(registry);
  }

  test('run only after startup completed', async () => {
    let runs = 0;
    const activities = probing((registry) =>
      registry.activity('probe', () => ++runs, { id: 'runs' }),
    );
    expect(await activities.probeReport()).toEqual({ results: {}, failures: [] });
    await settle(activities.startup());
    expect(await activities.probeReport()).toEqual({ results: { runs: 1 }, failures: [] });
  });

  test('results are reused for 10 s, then run anew', async () => {
    let runs = 0;
    const activities = probing((registry) =>
      registry.activity('probe', () => ++runs, { id: 'runs' }),
    );
    await settle(activities.startup());
    expect((await activities.probeReport()).results).toEqual({ runs: 1 });
    await clock.advanceAsync(9_999);
    expect((await activities.probeReport()).results).toEqual({ runs: 1 });
    await clock.advanceAsync(1);
    expect((await activities.probeReport()).results).toEqual({ runs: 2 });
  });

  test('requests arriving during a run share it', async () => {
    let runs = 0;
    const activities = probing((registry) =>
      registry.activity(
        'probe',
        async () => {
          runs++;
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          return 'done';
        },
        { id: 'slow' },
      ),
    );
    await settle(activities.startup());
    const both = Promise.all([activities.probeReport(), activities.probeReport()]);
    const { value } = await settle(both, 100);
    expect(value?.map((report) => report.results)).toEqual([{ slow: 'done' }, { slow: 'done' }]);
    expect(runs).toBe(1);
  });

  test('a failing probe is reported with its message, and one running past its timeout as timed out', async () => {
    const activities = probing((registry) => {
      registry.activity('probe', () => 42, { id: 'depth' });
      registry.activity('probe', () => Promise.reject(new Error('database unreachable')), {
        id: 'database',
      });
      registry.activity('probe', () => new Promise(() => undefined), { id: 'hung' });
      registry.activity('probe', () => undefined, { id: 'silent' });
    });
    await settle(activities.startup());
    const { value } = await settle(activities.probeReport());
    expect(value).toEqual({
      results: {
        depth: 42,
        database: { error: 'database unreachable' },
        hung: { error: 'timed out after 5 s' },
      },
      failures: ['probe database: database unreachable', 'probe hung: timed out after 5 s'],
    });
  });
});

describe('activity registration', () => {
  test('a class with only activity handlers registers, with ids Class.method or its id', () => {
    class Lifecycle {
      @on.startup()
      async start() {}

      @on.cleanup({ id: 'flush' })
      async stop() {}

      @on.probe({ id: 'depth' })
      depth() {
        return 0;
      }
    }
    const registry = new Registry().addClass(Lifecycle);
    expect(registry.activities.map((spec) => `${spec.kind} ${spec.id}`)).toEqual([
      'startup Lifecycle.start',
      'cleanup flush',
      'probe depth',
    ]);
    expect(registry.handlers).toEqual([]);
  });

  test('the same id twice for one activity is refused', () => {
    const registry = new Registry().activity('probe', () => 1, { id: 'depth' });
    expect(() => registry.activity('probe', () => 2, { id: 'depth' })).toThrow(
      "probe handler id 'depth' is registered twice; give one an explicit id",
    );
  });

  test('a negative or non-numeric retries/backoff/timeout fails when the class is defined', () => {
    expect(() => on.startup({ retries: 0 })).toThrow(
      '@on.startup retries: expected a number >= 1, got 0',
    );
    expect(() => on.probe({ timeout: Number.NaN })).toThrow(
      '@on.probe timeout: expected a number >= 0, got NaN',
    );
  });
});
