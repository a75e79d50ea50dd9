import {
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import {
  daemon,
  timer,
  type DaemonContext,
  type TimerContext,
} from '../../../src/framework/index.js';
import { FINALIZER } from '../../../src/framework/state/keys.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { readWidget, Widgets, WIDGET_API_VERSION, widgetIds } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function setLabels(
  kc: KubeConfig,
  namespace: string,
  name: string,
  labels: Record<string, string>,
): Promise<void> {
  await kc
    .makeApiClient(CustomObjectsApi)
    .patchNamespacedCustomObject(
      { ...widgetIds, namespace, name, body: { metadata: { labels } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
}

describe('timers and daemons', () => {
  const running: RunningOperator[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
  });

  test('a 1-second timer on 100 objects runs about once per second on each, never overlapping itself', async () => {
    const { kc, namespace } = await widgetNamespace('timer100');
    const runs = new Map<string, number>();
    const active = new Set<string>();
    let overlaps = 0;
    class Ticker {
      @timer(API, 'widgets', { interval: 1 })
      async tick({ name }: TimerContext): Promise<void> {
        if (active.has(name)) overlaps += 1;
        active.add(name);
        runs.set(name, (runs.get(name) ?? 0) + 1);
        await sleep(50);
        active.delete(name);
      }
    }
    await new Widgets(kc, namespace).createMany('t', 100);
    running.push(await startOperator(kc, namespace, [Ticker]));
    await waitFor(() => runs.size === 100, { what: 'every object to tick once' });
    const before = new Map(runs);
    await sleep(5_000);
    const counts = [...runs].map(([name, count]) => count - (before.get(name) ?? 0));

    expect(overlaps).toBe(0);
    expect(Math.min(...counts)).toBeGreaterThanOrEqual(3);
    expect(Math.max(...counts)).toBeLessThanOrEqual(6);
  });

  test('deleting an object stops its timer and daemon, and the finalizer goes only after the daemon exited', async () => {
    const { kc, namespace } = await widgetNamespace('daemon-del');
    const ticks: number[] = [];
    let daemonExitedAt: number | undefined;
    let daemonStarted = false;
    class Background {
      @timer(API, 'widgets', { interval: 0.5 })
      async tick(_: TimerContext): Promise<void> {
        ticks.push(Date.now());
      }

      @daemon(API, 'widgets', { cancellationTimeout: 10 })
      async watchExternal({ signal }: DaemonContext): Promise<void> {
        daemonStarted = true;
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        await sleep(1_500); // a slow, orderly shutdown
        daemonExitedAt = Date.now();
      }
    }
    running.push(await startOperator(kc, namespace, [Background]));
    const widgets = new Widgets(kc, namespace);
    await widgets.create('held');
    await waitFor(
      async () =>
        daemonStarted &&
        ticks.length > 0 &&
        Boolean((await readWidget(namespace, 'held'))?.metadata?.finalizers?.includes(FINALIZER)),
      { what: 'the daemon, the timer and the finalizer' },
    );

    await widgets.delete('held');
    await sleep(500);
    const whileStopping = await readWidget(namespace, 'held');
    expect(whileStopping?.metadata?.deletionTimestamp).toBeDefined();
    expect(daemonExitedAt).toBeUndefined();

    await waitFor(async () => (await readWidget(namespace, 'held')) === undefined, {
      what: 'the object to be gone',
    });
    const goneAt = Date.now();
    expect(daemonExitedAt).toBeDefined();
    expect(daemonExitedAt!).toBeLessThanOrEqual(goneAt);
    const ticksAtDeletion = ticks.length;
    await sleep(1_200);
    expect(ticks.length).toBe(ticksAtDeletion);
  });

  test('a timer and a daemon start when an object starts matching their filters and stop when it stops matching', async () => {
    const { kc, namespace } = await widgetNamespace('timer-filter');
    const ticks: number[] = [];
    const daemonLife: string[] = [];
    class Gold {
      @timer(API, 'widgets', { interval: 0.5, labels: { tier: 'gold' } })
      async tick(_: TimerContext): Promise<void> {
        ticks.push(Date.now());
      }

      @daemon(API, 'widgets', { labels: { tier: 'gold' } })
      async watchExternal({ signal }: DaemonContext): Promise<void> {
        daemonLife.push('start');
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        daemonLife.push('stop');
      }
    }
    await new Widgets(kc, namespace).create('plain');
    running.push(await startOperator(kc, namespace, [Gold]));
    await sleep(2_000);
    expect(ticks).toEqual([]);
    expect(daemonLife).toEqual([]);

    await setLabels(kc, namespace, 'plain', { tier: 'gold' });
    await waitFor(() => ticks.length >= 3 && daemonLife.length === 1, {
      what: 'the timer ticking and the daemon running',
    });

    await setLabels(kc, namespace, 'plain', { tier: 'silver' });
    await waitFor(() => daemonLife.length === 2, { what: 'the daemon to stop' });
    const ticksWhenStopped = ticks.length;
    await sleep(1_500); // three intervals
    expect(ticks.length).toBe(ticksWhenStopped);
    expect(daemonLife).toEqual(['start', 'stop']);
  });

  test('a persisted schedule survives a restart: halfway through the interval, the next run comes when the interval ends', async () => {
    const { kc, namespace } = await widgetNamespace('timer-persist');
    const ticks: number[] = [];
    // A 6 s interval with the persistence threshold lowered to 1 s stands in for 120 s with the 60 s default.
    class Slow {
      @timer(API, 'widgets', { interval: 6, persistThreshold: 1 })
      async tick(_: TimerContext): Promise<void> {
        ticks.push(Date.now());
      }
    }
    await new Widgets(kc, namespace).create('slow');
    const first = await startOperator(kc, namespace, [Slow]);
    await waitFor(
      async () =>
        ticks.length === 1 &&
        Boolean(
          (await readWidget(namespace, 'slow'))?.metadata?.annotations?.[
            'konductor.dev/timer.tick'
          ],
        ),
      { what: 'the first tick, persisted' },
    );
    await sleep(3_000 - (Date.now() - ticks[0]!));
    await first.stop();
    const restartedAt = Date.now();
    running.push(await startOperator(kc, namespace, [Slow]));
    await waitFor(() => ticks.length === 2, {
      what: 'the next tick after the restart',
      timeoutMs: 15_000,
    });

    const sinceFirst = ticks[1]! - ticks[0]!;
    expect(ticks[1]! - restartedAt).toBeGreaterThan(1_500); // not at once
    expect(sinceFirst).toBeGreaterThanOrEqual(5_500); // the interval is kept...
    expect(sinceFirst).toBeLessThan(8_000); // ...not started over
  });

  test('a 1-second timer on 1,000 objects causes no writes when its handler writes nothing', async () => {
    const { kc, namespace } = await widgetNamespace('timer1000');
    const ticked = new Set<string>();
    let ticks = 0;
    class Quiet {
      @timer(API, 'widgets', { interval: 1 })
      async tick({ name }: TimerContext): Promise<void> {
        ticks += 1;
        ticked.add(name);
      }
    }
    await new Widgets(kc, namespace).createMany('q', 1_000, 32);
    const run = await startOperator(kc, namespace, [Quiet]);
    running.push(run);
    const patches = (): number => run.requests.filter((r) => r.method === 'PATCH').length;
    // A busy machine stretches the start-up, not the outcome: wait on progress, not on the clock.
    await waitFor(() => ticked.size === 1_000, {
      what: 'every object to tick',
      timeoutMs: 150_000,
    });
    await waitFor(() => patches() >= 1_000, { what: 'the finalizers added at start-up' });
    const writesBefore = patches();
    const ticksBefore = ticks;
    await waitFor(() => ticks - ticksBefore >= 2_000, {
      what: 'two more ticks per object',
      timeoutMs: 60_000,
    });

    expect(patches() - writesBefore).toBe(0);
    expect(writesBefore).toBe(1_000); // one finalizer per object, nothing else
  }, 300_000);

  test('a timer and a daemon store what they return in status under their ids; a timer returning the same again writes nothing more', async () => {
    const { kc, namespace } = await widgetNamespace('results');
    let ticks = 0;
    class Reporting {
      @timer(API, 'widgets', { interval: 0.5 })
      check(_: TimerContext): { healthy: boolean } {
        ticks += 1;
        return { healthy: true };
      }

      @daemon(API, 'widgets')
      async migrate(_: DaemonContext): Promise<{ migrated: number }> {
        return { migrated: 3 };
      }
    }
    const run = await startOperator(kc, namespace, [Reporting]);
    running.push(run);
    await new Widgets(kc, namespace).create('reported');
    const stored = await waitFor(
      async () => {
        const status = (await readWidget(namespace, 'reported'))?.status;
        return status?.['check'] !== undefined && status['migrate'] !== undefined
          ? status
          : undefined;
      },
      { what: 'both results in status' },
    );
    await sleep(1_000); // the results' own writes have been watched back
    const writesBefore = run.requests.filter((r) => r.method === 'PATCH').length;
    const ticksBefore = ticks;
    await sleep(2_000);

    expect(stored).toMatchObject({ check: { healthy: true }, migrate: { migrated: 3 } });
    expect(ticks - ticksBefore).toBeGreaterThanOrEqual(3);
    expect(run.requests.filter((r) => r.method === 'PATCH').length - writesBefore).toBe(0);
  });
});
