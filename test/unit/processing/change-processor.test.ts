import {
  HandlerTimeoutError,
  PermanentError,
  TemporaryError,
} from '../../../src/framework/intents/errors.js';
import { ABSENT, PRESENT } from '../../../src/framework/intents/filters.js';
import { FINALIZER, progressKey } from '../../../src/framework/state/keys.js';
import { LogCapture } from '../../support/log-capture.js';
import type { ChangeHandlerOptions } from '../../../src/framework/intents/handler-specs.js';
import { uninstallFakeClock } from '../../support/fake-clock.js';
import { widget, type WidgetShape } from '../../support/widget-objects.js';
import {
  failing,
  handled,
  handler,
  Harness,
  OTHER_FINALIZER,
  parked,
  requeueOf,
} from './change-processor-harness.js';

// Every Harness installs the shared fake clock.
afterEach(uninstallFakeClock);

// ---------------------------------------------------------------------------------------------

describe('ChangeProcessor', () => {
  describe('retries', () => {
    test('`retries: 2` makes exactly two attempts, then records a failure that gave up and posts HandlerFailed once', async () => {
      const flaky = failing('create', 'flaky', { retries: 2 });
      const h = new Harness([flaky, parked()], widget());

      expect(requeueOf(await h.deliver())).toBe(1000);
      h.clock.advance(1000);
      await h.deliver();
      h.clock.advance(60_000);
      await h.deliver();

      expect(flaky.calls).toHaveLength(2);
      expect(h.record('flaky')).toMatchObject({ failure: true, retries: 2, purpose: 'create' });
      expect(h.record('flaky')?.message).toMatch(/gave up after 2 attempts/);
      expect(h.poster.withReason('HandlerFailed')).toEqual([
        expect.objectContaining({
          type: 'Warning',
          message: expect.stringMatching(/^flaky failed permanently/),
        }),
      ]);
    });

    test('a handler that gave up does not hold the cause open: its failure record stays for users and the diff-base is stored', async () => {
      const flaky = failing('create', 'flaky', { retries: 1 });
      const h = new Harness([flaky], widget());

      expect(await h.deliver()).toBeUndefined();
      expect(await h.deliver()).toBeUndefined();

      expect(flaky.calls).toHaveLength(1);
      expect(h.record('flaky')).toMatchObject({
        failure: true,
        message: expect.stringContaining('boom'),
      });
      expect(h.diffBase()).toEqual({ spec: { size: 1 } });
    });

    test('a final failure belongs to its change only: the next change runs the handler again and clears the record', async () => {
      const resized = handler('update', 'resized', {}, (context) => {
        if (context.spec.size === 2) throw new PermanentError('size 2 is not allowed');
      });
      const h = new Harness([resized], handled(widget()));

      h.edit((object) => (object.spec.size = 2));
      await h.deliver();
      expect(h.record('resized')).toMatchObject({
        failure: true,
        message: 'size 2 is not allowed',
      });

      h.edit((object) => (object.spec.size = 3));
      await h.deliver();

      expect(resized.calls).toHaveLength(2);
      expect(h.record('resized')).toBeUndefined();
    });

    test('each retry posts a HandlerRetrying Warning with the attempt and the delay', async () => {
      const h = new Harness([failing('create', 'flaky')], widget());

      await h.deliver();

      expect(h.poster.posted).toEqual([
        expect.objectContaining({
          type: 'Warning',
          reason: 'HandlerRetrying',
          message: 'flaky failed (attempt 1), retrying in 1 s: boom',
        }),
      ]);
    });

    test('the handler sees how many attempts came before', async () => {
      const flaky = failing('create', 'flaky');
      const h = new Harness([flaky], widget());

      await h.deliver();
      h.clock.advance(1000);
      await h.deliver();

      expect(flaky.calls.map((context) => context.retry)).toEqual([0, 1]);
    });

    test('a delayed handler is not called before its delay has passed', async () => {
      const flaky = failing('create', 'flaky');
      const h = new Harness([flaky], widget());

      await h.deliver();
      h.clock.advance(999);
      const result = await h.deliver();

      expect(flaky.calls).toHaveLength(1);
      expect(requeueOf(result)).toBe(1);
    });
  });

  describe('timeouts', () => {
    test('`timeout: 5`: once 5 s have passed since the first attempt, the next attempt fails permanently without calling the handler', async () => {
      const slow = failing('create', 'slow', { timeout: 5 });
      const h = new Harness([slow, parked()], widget());

      await h.deliver();
      h.clock.advance(5000);
      await h.deliver();

      expect(slow.calls).toHaveLength(1);
      expect(h.record('slow')).toMatchObject({ failure: true, message: 'timed out after 5 s' });
      expect(h.poster.withReason('HandlerFailed')).toEqual([
        expect.objectContaining({ message: 'slow failed permanently: timed out after 5 s' }),
      ]);
    });

    test('`timeout: 5`: a handler still running when its remaining time runs out is aborted and recorded as a failure', async () => {
      // First attempt fails fast; the second starts 4.95 s after the first, so it has 50 ms left.
      const hanging = handler('create', 'hanging', { timeout: 5 }, (context) => {
        if (context.retry === 0) throw new Error('boom');
        return new Promise((resolve) =>
          context.signal.addEventListener('abort', () => resolve(undefined)),
        );
      });
      const h = new Harness([hanging, parked()], widget());

      await h.deliver();
      h.clock.advance(4950);
      const second = h.deliver();
      await h.clock.advanceAsync(50);
      await second;

      expect(hanging.calls).toHaveLength(2);
      expect(hanging.calls[1]!.signal.aborted).toBe(true);
      expect(hanging.calls[1]!.signal.reason).toBeInstanceOf(HandlerTimeoutError);
      expect(h.record('hanging')).toMatchObject({
        failure: true,
        retries: 2,
        message: 'timed out after 5 s',
      });
    });

    test('a retry that would start after the timeout fails permanently at once', async () => {
      const slow = handler('create', 'slow', { timeout: 5 }, () => {
        throw new TemporaryError('later', { delay: 10 });
      });
      const h = new Harness([slow, parked()], widget());

      await h.deliver();

      expect(slow.calls).toHaveLength(1);
      expect(h.record('slow')).toMatchObject({ failure: true });
      expect(h.record('slow')?.message).toMatch(/would exceed its 5 s timeout/);
    });
  });

  describe('error modes', () => {
    test("`errors: 'permanent'`: a plain Error fails the handler on its first attempt", async () => {
      const strict = failing('create', 'strict', { errors: 'permanent' });
      const h = new Harness([strict, parked()], widget());

      await h.deliver();
      h.clock.advance(60_000);
      await h.deliver();

      expect(strict.calls).toHaveLength(1);
      expect(h.record('strict')).toMatchObject({ failure: true, retries: 1, message: 'boom' });
      expect(
        h.poster
          .withReason('HandlerRetrying')
          .filter((event) => event.message.startsWith('strict')),
      ).toEqual([]);
    });

    test("`errors: 'ignored'`: a plain Error counts as success; the handler's patch and the diff-base are written", async () => {
      const careless = handler('create', 'careless', { errors: 'ignored' }, (context) => {
        context.patch.metadata.labels.seen = 'yes';
        throw new Error('never mind');
      });
      const h = new Harness([careless], widget());

      expect(await h.deliver()).toBeUndefined();
      await h.deliver();

      expect(careless.calls).toHaveLength(1);
      expect(h.api.object.metadata?.labels).toEqual({ seen: 'yes' });
      expect(h.diffBase()).toEqual({ spec: { size: 1 }, metadata: { labels: { seen: 'yes' } } });
      expect(h.poster.posted).toEqual([]);
    });

    test("a PermanentError is final even with `errors: 'ignored'`", async () => {
      const h = new Harness(
        [
          handler('create', 'final', { errors: 'ignored' }, () => {
            throw new PermanentError('no way');
          }),
        ],
        widget(),
      );

      await h.deliver();

      expect(h.poster.withReason('HandlerFailed')).toEqual([
        expect.objectContaining({ message: 'final failed permanently: no way' }),
      ]);
    });
  });

  describe('backoff', () => {
    test('plain errors are retried after 1 s, 2 s, 4 s ... doubling up to 60 s', async () => {
      const h = new Harness([failing('create', 'flaky')], widget());
      const delays: number[] = [];

      for (let i = 0; i < 8; i++) {
        const result = await h.deliver();
        const delay = h.delayOf('flaky');
        expect(requeueOf(result)).toBe(delay);
        delays.push(delay);
        h.clock.advance(delay);
      }

      expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
    });

    test('`backoff: 7` retries every 7 s', async () => {
      const h = new Harness([failing('create', 'flaky', { backoff: 7 })], widget());
      const delays: number[] = [];

      for (let i = 0; i < 3; i++) {
        await h.deliver();
        delays.push(h.delayOf('flaky'));
        h.clock.advance(delays[i]!);
      }

      expect(delays).toEqual([7000, 7000, 7000]);
    });

    test('a TemporaryError with `delay: 0` asks to run again at once', async () => {
      const eager = handler('create', 'eager', {}, (context) => {
        if (context.retry === 0) throw new TemporaryError('again', { delay: 0 });
      });
      const h = new Harness([eager], widget());

      expect(await h.deliver()).toEqual({ requeueAfterMs: 0, retry: true });
      expect(await h.deliver()).toBeUndefined();
      expect(eager.calls).toHaveLength(2);
    });
  });

  describe('filters (the stealth rule)', () => {
    test('a create handler with `field` and no `value` runs only for objects where the field is present (as Kopf)', async () => {
      const withColor = handler('create', 'withColor', { field: 'spec.color' });
      const without = new Harness([withColor], widget({ spec: { size: 1 } }));
      const withIt = new Harness([withColor], widget({ spec: { size: 1, color: 'red' } }));

      await without.deliver();
      await withIt.deliver();

      expect(withColor.calls).toHaveLength(1);
      expect(without.api.writes).toEqual([]);
    });

    const cases: {
      what: string;
      options: ChangeHandlerOptions;
      matching: WidgetShape;
      other: WidgetShape;
    }[] = [
      {
        what: 'a label value',
        options: { labels: { app: 'demo' } },
        matching: { labels: { app: 'demo' } },
        other: { labels: { app: 'other' } },
      },
      {
        what: 'a PRESENT label',
        options: { labels: { app: PRESENT } },
        matching: { labels: { app: '' } },
        other: {},
      },
      {
        what: 'an ABSENT label',
        options: { labels: { app: ABSENT } },
        matching: {},
        other: { labels: { app: 'demo' } },
      },
      {
        what: 'an annotation value',
        options: { annotations: { 'example.com/managed': 'true' } },
        matching: { annotations: { 'example.com/managed': 'true' } },
        other: { annotations: { 'example.com/managed': 'false' } },
      },
      {
        what: 'a `when` predicate',
        options: { when: (object) => (object.spec as { size: number }).size > 1 },
        matching: { spec: { size: 2 } },
        other: { spec: { size: 1 } },
      },
    ];

    test.each(cases)(
      '$what: a non-matching object runs nothing and is never written to',
      async ({ options, other }) => {
        const create = handler('create', 'create', options);
        const remove = handler('delete', 'delete', options);
        const h = new Harness([create, remove], widget(other));

        expect(await h.deliver()).toBeUndefined();

        expect(create.calls).toHaveLength(0);
        expect(h.api.calls).toEqual([]);
      },
    );

    test.each(cases)('$what: a matching object is handled', async ({ options, matching }) => {
      const create = handler('create', 'create', options);
      const h = new Harness([create], widget(matching));

      await h.deliver();

      expect(create.calls).toHaveLength(1);
      expect(h.diffBase()).toBeDefined();
    });

    test('an object that stops matching has our finalizer removed, or it could never be deleted', async () => {
      const remove = handler('delete', 'delete', { labels: { app: 'demo' } });
      const h = new Harness(
        [remove],
        handled(widget({ labels: { app: 'demo' }, finalizers: [FINALIZER] })),
      );

      h.edit((object) => {
        delete object.metadata!.labels;
      });
      await h.deliver();

      expect(h.api.object.metadata?.finalizers).toEqual([]);
      expect(remove.calls).toHaveLength(0);
    });
  });

  describe('field handlers', () => {
    test('an update handler with `field` runs only when that field changed, with old, new and diff narrowed to it', async () => {
      const size = handler('update', 'size', { field: 'spec.size' });
      const color = handler('update', 'color', { field: 'spec.color' });
      const h = new Harness([size, color], handled(widget({ spec: { size: 1, color: 'red' } })));

      h.edit((object) => {
        object.spec.size = 2;
      });
      await h.deliver();

      expect(color.calls).toHaveLength(0);
      expect(size.calls).toHaveLength(1);
      expect(size.calls[0]).toMatchObject({
        reason: 'update',
        old: 1,
        new: 2,
        diff: [{ op: 'change', path: [], old: 1, new: 2 }],
      });
    });

    test('`old: ABSENT` selects the transition that adds the field', async () => {
      const added = handler('update', 'added', { field: 'spec.size', old: ABSENT });
      const h = new Harness([added], handled(widget({ spec: { color: 'red' } })));

      h.edit((object) => {
        object.spec.size = 3;
      });
      await h.deliver();
      h.edit((object) => {
        object.spec.size = 4;
      });
      await h.deliver();

      expect(added.calls.map((context) => [context.old, context.new])).toEqual([[undefined, 3]]);
    });

    test('`new: 3` selects only transitions to 3', async () => {
      const toThree = handler('update', 'to-three', { field: 'spec.size', new: 3 });
      const h = new Harness(
        [toThree, handler('update', 'any')],
        handled(widget({ spec: { size: 1 } })),
      );

      for (const size of [2, 3, 4]) {
        h.edit((object) => {
          object.spec.size = size;
        });
        await h.deliver();
      }

      expect(toThree.calls.map((context) => [context.old, context.new])).toEqual([[2, 3]]);
    });

    test('`value: 3` matches the old or the new value', async () => {
      const three = handler('update', 'three', { field: 'spec.size', value: 3 });
      const h = new Harness(
        [three, handler('update', 'any')],
        handled(widget({ spec: { size: 1 } })),
      );

      for (const size of [2, 3, 4]) {
        h.edit((object) => {
          object.spec.size = size;
        });
        await h.deliver();
      }

      expect(three.calls.map((context) => [context.old, context.new])).toEqual([
        [2, 3],
        [3, 4],
      ]);
    });

    test('a handler on `status.phase` runs when the phase changes, though status is otherwise outside the essence', async () => {
      const phase = handler('update', 'phase', { field: 'status.phase' });
      const h = new Harness(
        [phase],
        handled(widget({ status: { phase: 'Pending' } }), ['status.phase']),
      );

      h.edit((object) => {
        object.status.phase = 'Running';
      });
      await h.deliver();

      expect(phase.calls).toHaveLength(1);
      expect(phase.calls[0]).toMatchObject({ old: 'Pending', new: 'Running' });
      expect(h.diffBase()).toEqual({ spec: { size: 1 }, status: { phase: 'Running' } });
    });

    test('other status changes run nothing and write nothing', async () => {
      const phase = handler('update', 'phase', { field: 'status.phase' });
      const h = new Harness(
        [phase],
        handled(widget({ status: { phase: 'Pending' } }), ['status.phase']),
      );

      h.edit((object) => {
        object.status.message = 'still pending';
      });
      await h.deliver();

      expect(phase.calls).toHaveLength(0);
      expect(h.api.writes).toEqual([]);
    });
  });

  describe("echoes of the processor's own writes", () => {
    test("a handler's own spec patch causes no update when it comes back (the diff-base includes it)", async () => {
      const create = handler('create', 'create', {}, (context) => {
        context.patch.spec.size = 5;
      });
      const update = handler('update', 'update');
      const h = new Harness([create, update], widget());

      await h.deliver();
      const writes = h.api.writes.length;
      await h.deliver();

      expect(h.api.object.spec).toEqual({ size: 5 });
      expect(h.diffBase()).toEqual({ spec: { size: 5 } });
      expect(update.calls).toHaveLength(0);
      expect(h.api.writes).toHaveLength(writes);
    });

    test('status patches go to the status subresource, the rest in one merge PATCH', async () => {
      const create = handler('create', 'create', {}, (context) => {
        context.patch.status.phase = 'Ready';
        context.patch.metadata.labels.tier = 'gold';
      });
      const h = new Harness([create], widget());

      await h.deliver();

      expect(
        h.api.writes.map((call) =>
          call.method === 'mergePatch' ? (call.subresource ?? 'main') : call.method,
        ),
      ).toEqual(['status', 'main']);
      expect(h.api.object).toMatchObject({
        status: { phase: 'Ready' },
        metadata: { labels: { tier: 'gold' } },
      });
    });

    test('read-your-writes: an event that predates our write is processed against our written state (no second create)', async () => {
      const create = handler('create', 'create');
      const initial = widget();
      const h = new Harness([create], initial);

      await h.deliver();
      expect(h.api.object.metadata?.resourceVersion).toBe('2');
      // The watch is behind: it still delivers the object as it was before our write.
      await h.deliver({ object: initial });

      expect(create.calls).toHaveLength(1);
      expect(h.api.writes).toHaveLength(1);
    });

    test('read-your-writes: once our write comes back, later events are taken as they are', async () => {
      const update = handler('update', 'update');
      const h = new Harness([handler('create', 'create'), update], widget());

      await h.deliver();
      await h.deliver(); // our write comes back
      h.edit((object) => {
        object.spec.size = 2;
      });
      await h.deliver();

      expect(update.calls).toHaveLength(1);
    });
  });

  describe('API failures', () => {
    test('a 409 on the main PATCH re-reads the object and writes again, without re-running a handler whose object did not change', async () => {
      const create = handler('create', 'create');
      const h = new Harness([create], widget());
      h.api.failNext(409, 'mergePatch');

      expect(await h.deliver()).toBeUndefined();

      expect(h.api.calls.map((call) => call.method)).toEqual(['mergePatch', 'get', 'mergePatch']);
      expect(create.calls).toHaveLength(1);
      expect(h.diffBase()).toBeDefined();
    });

    test("a user's change while a handler runs: the run's write lands on the newest version, and the handler does not run again", async () => {
      const create = handler('create', 'create');
      const update = handler('update', 'update');
      const h = new Harness([create, update], widget());
      h.api.meanwhile(() => h.edit((object) => void (object.spec.size = 2)));

      expect(await h.deliver()).toBeUndefined();
      expect(h.api.calls.map((call) => call.method)).toEqual(['mergePatch', 'get', 'mergePatch']);
      await h.deliver();

      expect(create.calls).toHaveLength(1);
      expect(update.calls).toHaveLength(1);
    });

    test('a write that meets a newer version after this replica stopped handling objects is dropped: no re-read, no rerun, the newer write stays', async () => {
      const create = handler('create', 'create', {}, (context) => {
        context.patch.status.handledSize = 24;
      });
      const h = new Harness([create], widget());
      const stopped = new AbortController();
      h.api.meanwhile(() => {
        stopped.abort(); // this replica lost its Lease while the write was on its way
        h.edit((object) => void (object.status.handledSize = 1024)); // its heir wrote
      });

      expect(await h.deliver({ signal: stopped.signal })).toBeUndefined();

      expect(h.api.calls.map((call) => call.method)).toEqual(['mergePatch']);
      expect(create.calls).toHaveLength(1);
      expect(h.api.object.status).toEqual({ handledSize: 1024 });
    });

    test('a 409 whose re-read fails is retried with backoff instead of failing the run', async () => {
      const create = handler('create', 'create');
      const h = new Harness([create], widget());
      h.api.failNext(409, 'mergePatch');
      h.api.failNext(503, 'get');

      expect(requeueOf(await h.deliver())).toBeGreaterThanOrEqual(1000);
      expect(await h.deliver()).toBeUndefined();

      expect(h.api.calls.map((call) => call.method)).toEqual(['mergePatch', 'get', 'mergePatch']);
      expect(create.calls).toHaveLength(1);
      expect(h.diffBase()).toBeDefined();
    });

    test('a 409 whose re-read finds the object gone (404) ends processing quietly', async () => {
      const h = new Harness([handler('create', 'create')], widget());
      h.api.failNext(409, 'mergePatch');
      h.api.failNext(404, 'get');

      expect(await h.deliver()).toBeUndefined();
    });

    test('a 404 ends processing quietly: no retry, no re-read', async () => {
      const h = new Harness([handler('create', 'create')], widget());
      h.api.failNext(404, 'mergePatch');

      expect(await h.deliver()).toBeUndefined();

      expect(h.api.calls.map((call) => call.method)).toEqual(['mergePatch']);
    });

    test('a 500 asks to run again after at least 1 s, and a second failure in a row doubles the delay', async () => {
      const h = new Harness([handler('create', 'create')], widget());

      h.api.failNext(500, 'mergePatch');
      const first = requeueOf(await h.deliver());
      h.api.failNext(500, 'mergePatch');
      const second = requeueOf(await h.deliver());

      expect(first).toBeGreaterThanOrEqual(1000);
      expect(second).toBe(2 * first!);
    });

    test('a 429 waits at least as long as its Retry-After asks, even on the first failure', async () => {
      const h = new Harness([handler('create', 'create')], widget());

      h.api.failNext(429, 'mergePatch', 7);

      expect(requeueOf(await h.deliver())).toBe(7_000);
    });

    test('a handler that finished but whose result could not be written is not run again; its result is written on the retry', async () => {
      const create = handler('create', 'create', {}, ({ patch }) => {
        patch.status.phase = 'Ready';
      });
      const h = new Harness([create], widget());

      h.api.failNext(503, 'mergePatch');
      await h.deliver();
      await h.deliver();

      expect(create.calls).toHaveLength(1);
      expect((h.api.object as { status?: { phase?: string } }).status?.phase).toBe('Ready');
    });

    test('a result that could not be written is dropped when the object changes meanwhile: the handler runs for the new state', async () => {
      const update = handler('update', 'update');
      const h = new Harness([handler('create', 'create'), update], widget());
      await h.deliver();
      h.edit((object) => {
        object.spec.size = 2;
      });
      h.api.failNext(503, 'mergePatch');
      await h.deliver();
      h.edit((object) => {
        object.spec.size = 3;
      });
      await h.deliver();

      expect(update.calls.map((c) => (c.new as { spec: { size: number } }).spec.size)).toEqual([
        2, 3,
      ]);
    });

    test('a successful run resets the backoff for API failures', async () => {
      const update = handler('update', 'update');
      const h = new Harness([handler('create', 'create'), update], widget());

      h.api.failNext(500, 'mergePatch');
      await h.deliver();
      await h.deliver();
      h.edit((object) => {
        object.spec.size = 2;
      });
      h.api.failNext(500, 'mergePatch');

      expect(requeueOf(await h.deliver())).toBe(1000);
    });

    test('a finalizer patch whose test fails (422) re-reads the object and tries again', async () => {
      const h = new Harness([handler('delete', 'delete')], widget());
      h.api.failNext(422, 'jsonPatch');

      await h.deliver();

      expect(h.api.calls.map((call) => call.method)).toEqual([
        'jsonPatch',
        'get',
        'jsonPatch',
        'mergePatch',
      ]);
      expect(h.api.object.metadata?.finalizers).toEqual([FINALIZER]);
    });
  });

  describe('logging', () => {
    test("the handler's logger carries the object's namespace and name and the handler's id on every line", async () => {
      const log = new LogCapture();
      const h = new Harness(
        [
          handler('create', 'Widgets.created', {}, ({ logger }) => {
            logger.info({ step: 1 }, 'provisioning');
          }),
        ],
        widget(),
        log.logger,
      );

      await h.deliver();

      expect(log.containing('provisioning')).toEqual([
        expect.objectContaining({
          namespace: 'default',
          name: 'w1',
          handler: 'Widgets.created',
          step: 1,
        }),
      ]);
    });
  });

  describe('resuming', () => {
    test('on first sight through a listing, an unchanged object runs only resume handlers', async () => {
      const create = handler('create', 'create');
      const update = handler('update', 'update');
      const resume = handler('resume', 'resume');
      const h = new Harness([create, update, resume], handled(widget()));

      expect(await h.deliver({ fromList: true, type: 'ADDED' })).toBeUndefined();

      expect(resume.calls.map((context) => context.reason)).toEqual(['resume']);
      expect(create.calls).toHaveLength(0);
      expect(update.calls).toHaveLength(0);
      expect(h.api.writes).toEqual([]);
    });

    test('an already handled object arriving live in the watch (moved to this shard member) runs only resume handlers', async () => {
      const create = handler('create', 'create');
      const update = handler('update', 'update');
      const resume = handler('resume', 'resume');
      const h = new Harness([create, update, resume], handled(widget()));

      expect(await h.deliver({ type: 'ADDED' })).toBeUndefined();

      expect(resume.calls.map((context) => context.reason)).toEqual(['resume']);
      expect(create.calls).toHaveLength(0);
      expect(update.calls).toHaveLength(0);
    });

    test('a new object arriving live runs only create handlers', async () => {
      const create = handler('create', 'create');
      const resume = handler('resume', 'resume');
      const h = new Harness([create, resume], widget());

      await h.deliver({ type: 'ADDED' });
      await h.deliver();

      expect(create.calls).toHaveLength(1);
      expect(resume.calls).toHaveLength(0);
    });

    test('a later event without a change runs nothing', async () => {
      const resume = handler('resume', 'resume');
      const update = handler('update', 'update');
      const h = new Harness([resume, update], handled(widget()));

      await h.deliver({ fromList: true, type: 'ADDED' });
      await h.deliver();

      expect(resume.calls).toHaveLength(1);
      expect(update.calls).toHaveLength(0);
    });

    test('a resume handler that fails is retried on the requeue', async () => {
      const resume = handler('resume', 'resume', {}, (context) => {
        if (context.retry === 0) throw new Error('boom');
      });
      const h = new Harness([resume], handled(widget()));

      const result = await h.deliver({ fromList: true, type: 'ADDED' });
      h.clock.advance(requeueOf(result) ?? 0);
      await h.deliver();

      expect(resume.calls.map((context) => context.retry)).toEqual([0, 1]);
      expect(h.api.object.metadata?.annotations?.[progressKey('resume')]).toBeUndefined();
    });

    test('a changed object seen first through a listing runs update and resume handlers', async () => {
      const resume = handler('resume', 'resume');
      const update = handler('update', 'update');
      const h = new Harness([resume, update], handled(widget()));
      h.edit((object) => {
        object.spec.size = 2;
      });

      await h.deliver({ fromList: true, type: 'ADDED' });

      expect(resume.calls).toHaveLength(1);
      expect(update.calls).toHaveLength(1);
    });

    test('`deleted: true` resume handlers run for an object already being deleted on first sight', async () => {
      const resume = handler('resume', 'resume', { deleted: true });
      const h = new Harness([resume], handled(widget({ finalizers: [FINALIZER], deleting: true })));

      await h.deliver({ fromList: true, type: 'ADDED' });

      expect(resume.calls.map((context) => context.reason)).toEqual(['delete']);
    });

    test('resume handlers without `deleted` do not run for an object being deleted', async () => {
      const resume = handler('resume', 'resume');
      const h = new Harness([resume], handled(widget({ finalizers: [FINALIZER], deleting: true })));

      await h.deliver({ fromList: true, type: 'ADDED' });

      expect(resume.calls).toHaveLength(0);
    });
  });

  describe('deletion', () => {
    test('delete handlers run, then the finalizer is removed by a JSON patch that tests its exact index', async () => {
      const writesWhenCalled: number[] = [];
      const h: Harness = new Harness(
        [
          handler('delete', 'delete', {}, () => {
            writesWhenCalled.push(h.api.writes.length);
          }),
        ],
        handled(
          widget({ finalizers: [OTHER_FINALIZER, FINALIZER, 'example.com/last'], deleting: true }),
        ),
      );

      expect(await h.deliver()).toBeUndefined();

      expect(writesWhenCalled).toEqual([0]);
      expect(h.api.writes).toEqual([
        expect.objectContaining({
          method: 'jsonPatch',
          ops: [
            { op: 'test', path: '/metadata/finalizers/1', value: FINALIZER },
            { op: 'remove', path: '/metadata/finalizers/1' },
          ],
        }),
      ]);
      expect(h.api.object.metadata?.finalizers).toEqual([OTHER_FINALIZER, 'example.com/last']);
    });

    test('a failing delete handler keeps the finalizer and records its progress', async () => {
      const h = new Harness(
        [failing('delete', 'delete')],
        handled(widget({ finalizers: [FINALIZER], deleting: true })),
      );

      expect(requeueOf(await h.deliver())).toBe(1000);

      expect(h.api.object.metadata?.finalizers).toEqual([FINALIZER]);
      expect(h.record('delete')).toMatchObject({ purpose: 'delete', retries: 1 });
    });

    test('a delete handler that fails permanently keeps the finalizer, and its Event, progress message and log say why the object stays', async () => {
      const log = new LogCapture();
      const h = new Harness(
        [
          handler('delete', 'cleanup', {}, () => {
            throw new PermanentError('bucket is locked');
          }),
        ],
        handled(widget({ finalizers: [FINALIZER], deleting: true })),
        log.logger,
      );

      expect(await h.deliver()).toBeUndefined();

      expect(h.api.object.metadata?.finalizers).toEqual([FINALIZER]);
      const stays =
        /default\/w1 keeps the finalizer konductor\.dev\/finalizer and stays until the handler's problem is fixed .*or the finalizer is removed by hand/;
      expect(h.record('cleanup')).toMatchObject({
        purpose: 'delete',
        failure: true,
        message: expect.stringMatching(stays),
      });
      expect(h.poster.posted).toEqual([
        expect.objectContaining({
          type: 'Warning',
          reason: 'HandlerFailed',
          message: expect.stringMatching(stays),
        }),
      ]);
      expect(log.atLeast('error')).toEqual([
        expect.objectContaining({
          namespace: 'default',
          name: 'w1',
          handler: 'cleanup',
          msg: expect.stringMatching(stays),
        }),
      ]);
    });

    test('a delete handler that gave up after its retries keeps the finalizer too', async () => {
      const h = new Harness(
        [failing('delete', 'cleanup', { retries: 1 })],
        handled(widget({ finalizers: [FINALIZER], deleting: true })),
      );

      expect(await h.deliver()).toBeUndefined();

      expect(h.api.object.metadata?.finalizers).toEqual([FINALIZER]);
      expect(h.record('cleanup')).toMatchObject({ failure: true });
    });

    test('later events for an object kept by a failed delete handler neither run it again nor write or post anything', async () => {
      const cleanup = handler('delete', 'cleanup', {}, () => {
        throw new PermanentError('bucket is locked');
      });
      const h = new Harness(
        [cleanup],
        handled(widget({ finalizers: [FINALIZER], deleting: true })),
      );
      await h.deliver();
      const writes = h.api.writes.length;

      expect(await h.deliver()).toBeUndefined();

      expect(cleanup.calls).toHaveLength(1);
      expect(h.api.writes).toHaveLength(writes);
      expect(h.poster.posted).toHaveLength(1);
    });

    test('after a restart (first sight through a listing), a delete handler that failed permanently runs again; its success removes the finalizer', async () => {
      let fixed = false;
      const cleanup = handler('delete', 'cleanup', {}, () => {
        if (!fixed) throw new PermanentError('bucket is locked');
      });
      const before = new Harness(
        [cleanup],
        handled(widget({ finalizers: [FINALIZER], deleting: true })),
      );
      await before.deliver();
      fixed = true;

      const after = new Harness([cleanup], before.api);
      expect(await after.deliver({ fromList: true, type: 'ADDED' })).toBeUndefined();

      expect(cleanup.calls).toHaveLength(2);
      expect(after.api.object.metadata?.finalizers ?? []).toEqual([]);
    });

    test('an optional delete handler that fails permanently does not keep the finalizer', async () => {
      const optional = handler('delete', 'optional', { optional: true }, () => {
        throw new PermanentError('nothing to clean');
      });
      const h = new Harness(
        [handler('delete', 'cleanup'), optional],
        handled(widget({ finalizers: [FINALIZER], deleting: true })),
      );

      expect(await h.deliver()).toBeUndefined();

      expect(optional.calls).toHaveLength(1);
      expect(h.api.object.metadata?.finalizers ?? []).toEqual([]);
    });

    test('a non-optional delete handler has the finalizer added before other handlers run on a new object', async () => {
      const seen: { writes: number; finalizers: string[] | undefined }[] = [];
      const h: Harness = new Harness(
        [
          handler('delete', 'delete'),
          handler('create', 'create', {}, (context) =>
            seen.push({ writes: h.api.writes.length, finalizers: context.metadata.finalizers }),
          ),
        ],
        widget(),
      );

      await h.deliver();

      expect(h.api.writes[0]).toEqual({
        method: 'jsonPatch',
        namespace: 'default',
        name: 'w1',
        ops: [
          { op: 'test', path: '/metadata/resourceVersion', value: '1' },
          { op: 'add', path: '/metadata/finalizers', value: [FINALIZER] },
        ],
      });
      expect(seen).toEqual([{ writes: 1, finalizers: [FINALIZER] }]);
    });

    test('an optional delete handler adds no finalizer', async () => {
      const h = new Harness([handler('delete', 'delete', { optional: true })], widget());

      await h.deliver();

      expect(h.api.object.metadata?.finalizers).toBeUndefined();
    });

    test('an object being deleted without our finalizer runs nothing', async () => {
      const handlers = [
        handler('create', 'create'),
        handler('update', 'update'),
        handler('delete', 'delete'),
        handler('resume', 'resume', { deleted: true }),
      ];
      const h = new Harness(
        handlers,
        handled(widget({ finalizers: [OTHER_FINALIZER], deleting: true })),
      );

      expect(await h.deliver({ fromList: true })).toBeUndefined();

      expect(handlers.flatMap((spec) => spec.calls)).toEqual([]);
      expect(h.api.calls).toEqual([]);
    });

    test('an optional delete handler runs once, best effort, when the object is gone without our finalizer', async () => {
      const optional = handler('delete', 'optional', { optional: true }, () => {
        throw new Error('cannot clean up');
      });
      const h = new Harness([optional], widget());

      expect(await h.deliver({ type: 'DELETED' })).toBeUndefined();

      expect(optional.calls.map((context) => context.reason)).toEqual(['delete']);
      expect(h.api.calls).toEqual([]);
    });

    test('an optional delete handler does not run on DELETED when our finalizer was on the object', async () => {
      const optional = handler('delete', 'optional', { optional: true });
      const h = new Harness([optional], widget({ finalizers: [FINALIZER] }));

      await h.deliver({ type: 'DELETED' });

      expect(optional.calls).toHaveLength(0);
    });
  });
});
