import type { ResourceSelector } from '../../../src/framework/api/resource.js';
import { TimerEngine } from '../../../src/framework/engines/timers.js';
import type { TimerContext, TimerOptions } from '../../../src/framework/intents/handler-specs.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { Identity } from '../../../src/framework/state/identity.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import { WIDGET_API_VERSION, widget, widgetResource } from '../../support/widget-objects.js';
import { FakeObjectApi, FakePoster } from '../processing/fake-object-api.js';

const T0 = Date.parse('2024-05-01T12:00:00.000Z');
const SELECTOR: ResourceSelector = { apiVersion: WIDGET_API_VERSION, name: widgetResource.plural };
const ALPHA = Identity.parse('alpha.example.com');
const BETA = Identity.parse('beta.example.com');

let clock: FakeClock;
beforeEach(() => {
  clock = installFakeClock({ now: T0 });
});
afterEach(() => {
  clock.uninstall();
});

/** A timer engine of the identity `alpha.example.com` over one fake Widget. */
function alphaTimer(
  options: TimerOptions,
  fn: (context: TimerContext) => unknown,
  object: KubeObject = widget(),
) {
  const api = new FakeObjectApi(object);
  const make = (): TimerEngine =>
    new TimerEngine({
      api: api.asObjectApi(),
      timers: [{ kind: 'timer', id: 't', resource: SELECTOR, options, fn }],
      logger: silentLogger(),
      poster: new FakePoster().asEventPoster(),
      clock,
      identity: ALPHA,
    });
  return { engine: make(), make, api };
}

const stop = async (engine: TimerEngine): Promise<void> => {
  const stopped = engine.stopAll();
  await clock.advanceAsync(10_000);
  await stopped;
};

describe('timers under an identity of its own', () => {
  test("keep a long timer's schedule under the identity, with its marker", async () => {
    const { engine, api } = alphaTimer({ interval: 'PT2M' }, () => undefined);
    engine.observe(widget());
    await clock.advanceAsync(1);

    const annotations = api.object.metadata?.annotations ?? {};
    expect(Object.keys(annotations).sort()).toEqual(
      [ALPHA.managedMarker, ALPHA.timerKey('t')].sort(),
    );
    expect(JSON.parse(annotations[ALPHA.timerKey('t')] ?? '{}')).toMatchObject({
      lastStart: '2024-05-01T12:00:00.000Z',
    });
    await stop(engine);
  });

  test('restart from the schedule under their identity, not from the default one', async () => {
    const starts: number[] = [];
    const lastRun = new Date(T0 - 60_000).toISOString();
    const record = JSON.stringify({ lastStart: lastRun, lastEnd: lastRun, lastSuccess: lastRun });
    // The default identity's record says the timer ran long ago; alpha's, a minute ago.
    const long = new Date(T0 - 3_600_000).toISOString();
    const stale = JSON.stringify({ lastStart: long, lastEnd: long, lastSuccess: long });
    const object = widget({
      annotations: { [ALPHA.timerKey('t')]: record, [Identity.DEFAULT.timerKey('t')]: stale },
    });
    const { engine } = alphaTimer(
      { interval: 'PT2M' },
      () => void starts.push(clock.now() - T0),
      object,
    );
    engine.observe(object);
    await clock.advanceAsync(30_000);
    expect(starts).toEqual([]);
    await clock.advanceAsync(31_000);
    expect(starts).toEqual([60_000]);
    await stop(engine);
  });

  test("do not take another operator's marked bookkeeping for a change that restarts an idle wait", async () => {
    const starts: number[] = [];
    const { engine } = alphaTimer(
      { interval: 10, idle: 10 },
      () => void starts.push(clock.now() - T0),
    );
    engine.observe(widget());
    await clock.advanceAsync(5_000);
    engine.observe(
      widget({
        annotations: { [BETA.managedMarker!]: 'yes', [BETA.progressKey('h')]: '{"retries":1}' },
      }),
    );
    await clock.advanceAsync(5_500);
    expect(starts).toEqual([10_000]);
    await stop(engine);
  });
});
