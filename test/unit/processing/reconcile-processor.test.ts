import { PermanentError, TemporaryError } from '../../../src/framework/intents/errors.js';
import {
  reconcileSpec,
  type ReconcileContext,
  type ReconcileHandlerFn,
  type ReconcileOptions,
} from '../../../src/framework/intents/reconcile-specs.js';
import { ReleaseDeferred } from '../../../src/framework/processing/finalizer-step.js';
import { ReconcileProcessor } from '../../../src/framework/processing/reconcile-processor.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { Reactor } from '../../../src/framework/reactor/reactor.js';
import type { ObjectEvent } from '../../../src/framework/watching/watch-events.js';
import { installFakeClock, uninstallFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { LogCapture } from '../../support/log-capture.js';
import { WIDGET_API_VERSION, widget, type WidgetShape } from '../../support/widget-objects.js';
import { FakeObjectApi } from './fake-object-api.js';

type Seen = Pick<ReconcileContext, 'spec' | 'deleting' | 'retry'>;

let clock: FakeClock;
beforeEach(() => {
  clock = installFakeClock({ now: '2026-11-29T12:00:00Z' });
});
afterEach(() => uninstallFakeClock());

function setup(fn: ReconcileHandlerFn, options: ReconcileOptions = {}, shape: WidgetShape = {}) {
  const api = new FakeObjectApi({
    ...widget(shape),
    metadata: { ...widget(shape).metadata, generation: 1 },
  });
  const logs = new LogCapture();
  const processor = new ReconcileProcessor({
    api: api.asObjectApi(),
    handler: reconcileSpec(
      'reconcile',
      { apiVersion: WIDGET_API_VERSION, name: 'widgets' },
      options,
      fn,
    ),
    logger: logs.logger,
  });
  const event = (object: KubeObject = api.object): ObjectEvent<KubeObject> => ({
    type: 'MODIFIED',
    object,
    fromList: false,
  });
  const run = (events: ObjectEvent<KubeObject>[] = [event()]) =>
    processor.process({
      uid: 'uid-1',
      latest: events[events.length - 1] ?? event(),
      events,
      signal: new AbortController().signal,
    });
  /** The events a watch would deliver for every write since `from` (an index into the fake's history). */
  const echoes = (from: number): ObjectEvent<KubeObject>[] =>
    api.history.slice(from).map((object) => event(object));
  return { api, logs, processor, run, echoes };
}

describe('reconcile runs (ReconcileProcessor)', () => {
  test('a change runs the handler once with the object as it is now', async () => {
    const seen: Seen[] = [];
    const { run } = setup(({ spec, deleting, retry }) => void seen.push({ spec, deleting, retry }));

    expect(await run()).toBeUndefined();

    expect(seen).toEqual([{ spec: { size: 1 }, deleting: false, retry: 0 }]);
  });

  test("the handler's status, its conditions and the observed generation go out in one status PATCH", async () => {
    const { run, api } = setup(({ patch, conditions }) => {
      patch.status.phase = 'Ready';
      conditions.set('Ready', true, { message: 'all good' });
    });

    await run();

    expect(api.writes).toEqual([
      {
        method: 'mergePatch',
        namespace: 'default',
        name: 'w1',
        subresource: 'status',
        body: {
          status: {
            phase: 'Ready',
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                observedGeneration: 1,
                lastTransitionTime: '2026-11-29T12:00:00Z',
                reason: 'Ready',
                message: 'all good',
              },
            ],
            observedGeneration: 1,
          },
        },
      },
    ]);
  });

  test('the event of its own write runs nothing, and a run that would change nothing writes nothing', async () => {
    let runs = 0;
    const { run, api, echoes } = setup(({ patch }) => {
      runs += 1;
      patch.status.phase = 'Ready';
    });
    const before = api.history.length;

    await run();
    await clock.advanceAsync(1_000);
    await run(echoes(before));
    await run([{ type: 'MODIFIED', object: api.object, fromList: true }]);

    expect(runs).toBe(2);
    expect(api.writes).toHaveLength(1);
  });

  test('100 updates to one object in 1 s make at most 10 runs, and the last run sees the last state', async () => {
    const sizes: unknown[] = [];
    const { processor, api } = setup(({ spec }) => void sizes.push(spec.size));
    const reactor = new Reactor<KubeObject, undefined>((batch) => processor.process(batch), {
      clock,
    });

    for (let size = 1; size <= 100; size++) {
      reactor.push(
        { type: 'MODIFIED', object: api.put({ ...api.object, spec: { size } }), fromList: false },
        undefined,
      );
      await clock.advanceAsync(10);
    }
    await clock.advanceAsync(1_000);
    await reactor.onIdle();

    expect(sizes.length).toBeLessThanOrEqual(10);
    expect(sizes[sizes.length - 1]).toBe(100);
    await reactor.stop(0);
  });

  test('runs of one object start at least minInterval apart: a change inside it is run when it ends', async () => {
    const { run, api } = setup(() => undefined, { minInterval: 2 });

    await run();
    await clock.advanceAsync(500);
    const changed = api.put({ ...api.object, spec: { size: 2 } });

    expect(await run([{ type: 'MODIFIED', object: changed, fromList: false }])).toEqual({
      requeueAfterMs: 1_500,
    });
  });

  test('a returned delay runs it again after the delay; requeueAfter does the same for every successful run', async () => {
    const returned = setup(() => 'PT30S');
    const configured = setup(() => undefined, { requeueAfter: 60 });

    expect(await returned.run()).toEqual({ requeueAfterMs: 30_000 });
    expect(await configured.run()).toEqual({ requeueAfterMs: 60_000 });
    await clock.advanceAsync(60_000);
    expect(await configured.run([])).toEqual({ requeueAfterMs: 60_000 });
  });

  test('a handler may raise the priority of its next run: the requeue says so', async () => {
    const urgent = setup(() => ({ requeueAfter: 5, priority: 'high' as const }));
    const malformed = setup(() => ({ requeueAfter: 'soon' }));

    expect(await urgent.run()).toEqual({ requeueAfterMs: 5_000, priority: 'high' });
    expect(await malformed.run()).toBeUndefined();
    expect(
      malformed.logs.containing(
        "failed permanently (not retried until it changes): the delay reconcile returned: 'soon' is not a duration",
      ),
    ).toHaveLength(1);
  });

  test('a TemporaryError is retried after its delay; another error after 1 s, then 2 s; its patch is not sent', async () => {
    const temporary = setup(() => {
      throw new TemporaryError('not yet', { delay: 7 });
    });
    let failures = 0;
    const failing = setup(({ patch, retry }) => {
      patch.status.phase = `attempt ${retry}`;
      failures += 1;
      throw new Error('boom');
    });

    expect(await temporary.run()).toEqual({ requeueAfterMs: 7_000, retry: true });
    expect(await failing.run()).toEqual({ requeueAfterMs: 1_000, retry: true });
    await clock.advanceAsync(1_000);
    expect(await failing.run([])).toEqual({ requeueAfterMs: 2_000, retry: true });
    expect(failures).toBe(2);
    expect(failing.api.writes).toEqual([]);
    expect(
      failing.logs.containing(
        'reconcile reconcile of default/w1 failed (its patch is not sent; retrying in 1 s): boom',
      ),
    ).toHaveLength(1);
  });

  test('a PermanentError is not retried until the object changes', async () => {
    let runs = 0;
    const { run, api } = setup(() => {
      runs += 1;
      throw new PermanentError('spec.size must be positive');
    });

    expect(await run()).toBeUndefined();
    await clock.advanceAsync(120_000);
    expect(await run([])).toBeUndefined();
    await run([
      { type: 'MODIFIED', object: api.put({ ...api.object, spec: { size: 2 } }), fromList: false },
    ]);

    expect(runs).toBe(2);
  });

  test('a woken object (a child or watched object changed) runs without an event of its own', async () => {
    let runs = 0;
    const { run, processor } = setup(() => void (runs += 1));

    await run();
    await clock.advanceAsync(1_000);
    processor.wake('uid-1');
    await run([]);

    expect(runs).toBe(2);
  });

  test('an object being deleted is not reconciled by its events; its last run comes from the finalizer step with deleting', async () => {
    const seen: Seen[] = [];
    const { run, processor, api } = setup(
      ({ spec, deleting, retry }) => void seen.push({ spec, deleting, retry }),
      {},
      { deleting: true, finalizers: ['konductor.dev/finalizer'] },
    );

    await run();
    await processor.finalize(api.object, new AbortController().signal);

    expect(seen).toEqual([{ spec: { size: 1 }, deleting: true, retry: 0 }]);
  });

  test('a failed last run keeps the finalizer: the release is deferred by the retry delay', async () => {
    const { processor, api } = setup(() => {
      throw new TemporaryError('the backup is still uploading', { delay: 5 });
    });

    await expect(processor.finalize(api.object, new AbortController().signal)).rejects.toEqual(
      new ReleaseDeferred(5_000),
    );
  });

  test('with finalizer: false an object is not held for a last run', async () => {
    const held = setup(() => undefined);
    const free = setup(() => undefined, { finalizer: false });

    expect(held.processor.applies(held.api.object)).toBe(true);
    expect(free.processor.applies(free.api.object)).toBe(false);
  });
});
