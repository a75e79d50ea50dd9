import {
  Reactor,
  type ObjectBatch,
  type ReactorOptions,
} from '../../../src/framework/reactor/reactor.js';
import { waitFor } from '../../support/wait-for.js';
import { deferred, often, tick, widgetEvent, type Widget } from './helpers.js';

/** What a test sees of one run. */
interface Run {
  uid: string;
  latest: number;
  events: number[];
  route: string;
}

const reactors: Reactor<Widget, string>[] = [];

function reactorWith(
  processor: (batch: ObjectBatch<Widget, string>) => Promise<void> = async () => undefined,
  options: ReactorOptions = {},
) {
  const runs: Run[] = [];
  const reactor = new Reactor<Widget, string>(async (batch) => {
    runs.push({
      uid: batch.uid,
      latest: batch.latest.object.spec.n,
      events: batch.events.map((e) => e.object.spec.n),
      route: batch.route,
    });
    await processor(batch);
  }, options);
  reactors.push(reactor);
  return { reactor, runs };
}

afterEach(async () => {
  await Promise.all(reactors.splice(0).map((r) => r.stop(0)));
});

describe('waking an object without a raw event (Reactor.wake, for owned children)', () => {
  test('an idle object runs once on its given state, with no raw events for event observers', async () => {
    const { reactor, runs } = reactorWith();

    reactor.wake(widgetEvent('a', 3), 'owner-route');
    await reactor.onIdle();

    expect(runs).toEqual([{ uid: 'a', latest: 3, events: [], route: 'owner-route' }]);
  });

  test('wakes before the run starts merge into one run, along with queued events', async () => {
    const blocker = deferred();
    // One slot, held by another object, so the wakes below wait in the queue.
    const { reactor: single, runs } = reactorWith(
      async ({ uid }) => {
        if (uid === 'blocker') await blocker.promise;
      },
      { concurrency: 1 },
    );

    single.push(widgetEvent('blocker', 1), 'route');
    await waitFor(() => single.running === 1, {
      what: 'the blocker to run',
      timeoutMs: 1_000,
      ...often,
    });
    single.push(widgetEvent('a', 1), 'route');
    for (let i = 0; i < 20; i++) single.wake(widgetEvent('a', 1), 'route');
    blocker.resolve();
    await single.onIdle();

    expect(runs.filter((run) => run.uid === 'a')).toEqual([
      { uid: 'a', latest: 1, events: [1], route: 'route' },
    ]);
  });

  test('a wake while the object runs is followed by exactly one more run', async () => {
    const first = deferred();
    const { reactor, runs } = reactorWith(async () => {
      if (runs.length === 1) await first.promise;
    });

    reactor.push(widgetEvent('a', 1), 'route');
    await waitFor(() => reactor.running === 1, {
      what: 'the first run to start',
      timeoutMs: 1_000,
      ...often,
    });
    reactor.wake(widgetEvent('a', 1), 'route');
    reactor.wake(widgetEvent('a', 1), 'route');
    await tick();
    expect(runs).toHaveLength(1);

    first.resolve();
    await reactor.onIdle();

    expect(runs).toHaveLength(2);
    expect(runs[1]).toMatchObject({ uid: 'a', events: [] });
  });

  test('a stopped reactor ignores wakes', async () => {
    const { reactor, runs } = reactorWith();
    await reactor.stop(0);

    reactor.wake(widgetEvent('a', 1), 'route');
    await tick();

    expect(runs).toEqual([]);
  });
});
