/**
 * The change processor treats everything stored on an object as untrusted: forged or corrupt
 * bookkeeping, copied objects, handlers that throw odd values or patch what they must not, and
 * writes the API server refuses. None of it may crash, loop, or lose a change.
 */
import {
  MAX_TEMPORARY_DELAY_SECONDS,
  TemporaryError,
} from '../../../src/framework/intents/errors.js';
import { serializeDiffBase } from '../../../src/framework/state/essence.js';
import { DIFF_BASE_KEY, FINALIZER, progressKey } from '../../../src/framework/state/keys.js';
import { MAX_PROGRESS_MESSAGE_LENGTH } from '../../../src/framework/state/progress.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { uninstallFakeClock } from '../../support/fake-clock.js';
import { widget } from '../../support/widget-objects.js';
import { failing, handled, handler, Harness, requeueOf, UID } from './change-processor-harness.js';
import { LogCapture } from '../../support/log-capture.js';

// Every Harness installs the shared fake clock.
afterEach(uninstallFakeClock);

/** `object` with an extra annotation, as a user (or an attacker) with edit rights could set it. */
function annotated(object: KubeObject, key: string, value: string): KubeObject {
  return {
    ...object,
    metadata: {
      ...object.metadata,
      annotations: { ...object.metadata?.annotations, [key]: value },
    },
  };
}

describe('forged or corrupt framework annotations', () => {
  test('a progress record with `started: "garbage"` is reported with one InvalidAnnotation Warning and the handler runs exactly once', async () => {
    const created = handler('create', 'created');
    const h = new Harness(
      [created],
      annotated(
        widget(),
        progressKey('created'),
        '{"started":"garbage","purpose":"create","base":"none"}',
      ),
    );

    expect(await h.deliver()).toBeUndefined();
    await h.deliver();

    expect(created.calls).toHaveLength(1);
    expect(h.poster.withReason('InvalidAnnotation')).toEqual([
      expect.objectContaining({
        type: 'Warning',
        message: expect.stringContaining(
          `annotation ${progressKey('created')} is unusable (started is not an ISO-8601 UTC time)`,
        ),
      }),
    ]);
    expect(h.api.object.metadata?.annotations?.[progressKey('created')]).toBeUndefined();
  });

  test('`retries: "x"` cannot lift the retry limit: the handler gives up after its `retries`', async () => {
    const flaky = failing('create', 'flaky', { retries: 2 });
    const h = new Harness(
      [flaky],
      annotated(widget(), progressKey('flaky'), '{"retries":"x","purpose":"create","base":"none"}'),
    );

    for (let i = 0; i < 4; i++) {
      await h.deliver();
      h.clock.advance(60_000);
    }

    expect(flaky.calls).toHaveLength(2);
    expect(h.record('flaky')).toMatchObject({ failure: true, retries: 2 });
  });

  test('an unusable diff-base is reported once, not on every retry, and the object is handled as new', async () => {
    const flaky = failing('create', 'flaky');
    const h = new Harness([flaky], annotated(widget(), DIFF_BASE_KEY, '{"spec":'));

    await h.deliver();
    h.clock.advance(1_000);
    await h.deliver();
    h.clock.advance(2_000);
    await h.deliver();

    expect(flaky.calls.map((context) => context.reason)).toEqual(['create', 'create', 'create']);
    expect(h.poster.withReason('InvalidAnnotation')).toHaveLength(1);
    expect(h.poster.withReason('InvalidAnnotation')[0]!.message).toContain(
      `annotation ${DIFF_BASE_KEY} is unusable (not JSON)`,
    );
  });

  test('a diff-base that is JSON but not an object is reported and replaced once the create is handled', async () => {
    const created = handler('create', 'created');
    const h = new Harness([created], annotated(widget(), DIFF_BASE_KEY, '[1,2]'));

    await h.deliver();

    expect(created.calls).toHaveLength(1);
    expect(h.poster.withReason('InvalidAnnotation')).toHaveLength(1);
    expect(h.diffBase()).toEqual({ spec: { size: 1 } });
  });
});

describe('a failure is a failure', () => {
  const throwers: [string, () => unknown][] = [
    [
      'throw undefined',
      () => {
        throw undefined;
      },
    ],
    ['Promise.reject()', () => Promise.reject()],
    [
      'a thrown string',
      () => {
        throw 'out of disk';
      },
    ],
    [
      'a thrown plain object',
      () => {
        throw { code: 7 };
      },
    ],
  ];

  test.each(throwers)(
    '%s is retried like any error and the diff-base is not stored',
    async (_name, body) => {
      const odd = handler('create', 'odd', {}, body);
      const h = new Harness([odd], widget());

      const result = await h.deliver();

      expect(requeueOf(result)).toBe(1_000);
      expect(h.record('odd')).toMatchObject({
        retries: 1,
        message: expect.stringContaining('non-Error'),
      });
      expect(h.record('odd')?.success).toBeUndefined();
      expect(h.api.object.metadata?.annotations?.[DIFF_BASE_KEY]).toBeUndefined();
      expect(h.poster.withReason('HandlerRetrying')).toHaveLength(1);
    },
  );
});

describe('copied objects', () => {
  test('a diff-base copied from another object does not suppress create handlers', async () => {
    const original = handled(widget());
    const copiedDiffBase = serializeDiffBase({ spec: { size: 1 } }, 'uid-of-the-original');
    const created = handler('create', 'created');
    const h = new Harness([created], annotated(original, DIFF_BASE_KEY, copiedDiffBase));

    await h.deliver();

    expect(created.calls.map((context) => context.reason)).toEqual(['create']);
  });

  test('the stored diff-base names the object it was written for', async () => {
    const h = new Harness([handler('create', 'created')], widget());

    await h.deliver();

    expect(JSON.parse(h.api.object.metadata!.annotations![DIFF_BASE_KEY]!)).toEqual({
      spec: { size: 1 },
      metadata: { uid: UID },
    });
    expect(h.diffBase()).toEqual({ spec: { size: 1 } });
  });

  test('progress copied from another object does not count as this object’s: the handler starts from its first attempt', async () => {
    const flaky = failing('create', 'flaky', { retries: 3 });
    const source = new Harness([flaky], widget());
    await source.deliver();
    const copiedRecord = source.api.object.metadata!.annotations![progressKey('flaky')]!;
    const copy: KubeObject = annotated(
      { ...widget(), metadata: { ...widget().metadata, uid: 'uid-of-the-copy' } },
      progressKey('flaky'),
      copiedRecord,
    );
    const h = new Harness([flaky], copy);

    await h.deliver();

    expect(flaky.calls.map((context) => context.retry)).toEqual([0, 0]);
  });
});

describe('writes the API server refuses', () => {
  test('a 422 gives one WriteRefused Warning and a bounded, backed-off retry, then the object waits for a change', async () => {
    const created = handler('create', 'created');
    const h = new Harness([created], widget());
    for (let i = 0; i < 10; i++) h.api.failNext(422, 'mergePatch');

    const delays: (number | undefined)[] = [];
    for (let i = 0; i < 7; i++) delays.push(requeueOf(await h.deliver()));

    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, undefined, undefined, undefined]);
    expect(h.api.writes).toHaveLength(5);
    expect(created.calls).toHaveLength(1);
    expect(h.poster.withReason('WriteRefused')).toEqual([
      expect.objectContaining({ type: 'Warning', message: expect.stringContaining('(422)') }),
    ]);
  });

  test('after a refused write, a change of the object is handled again', async () => {
    const created = handler('create', 'created');
    const h = new Harness([created], widget());
    h.api.failNext(400, 'mergePatch');
    await h.deliver();

    h.edit((object) => (object.spec.size = 2));
    await h.deliver();

    expect(created.calls).toHaveLength(2);
    expect(h.diffBase()).toEqual({ spec: { size: 2 } });
  });

  test('a 400 on our own write is not retried: one Warning, no requeue', async () => {
    const h = new Harness([handler('create', 'created')], widget());
    h.api.failNext(400, 'mergePatch');

    expect(await h.deliver()).toBeUndefined();
    expect(await h.deliver()).toBeUndefined();

    expect(h.api.writes).toHaveLength(1);
    expect(h.poster.withReason('WriteRefused')).toHaveLength(1);
  });

  test('a long error message is capped in the progress record', async () => {
    const verbose = handler('create', 'verbose', {}, () => {
      throw new Error('x'.repeat(50_000));
    });
    const h = new Harness([verbose], widget());

    await h.deliver();

    const message = h.record('verbose')?.message ?? '';
    expect(message.length).toBeLessThanOrEqual(MAX_PROGRESS_MESSAGE_LENGTH);
    expect(message).toMatch(/\(truncated\)$/);
  });
});

describe('handlers cannot break the framework’s bookkeeping', () => {
  test('a patch setting metadata.resourceVersion or uid is refused with a HandlerFailed Warning and never sent', async () => {
    const meddler = handler('create', 'meddler', {}, ({ patch }) => {
      patch.metadata.resourceVersion = '1';
      patch.metadata.uid = 'someone-else';
      patch.spec.size = 5;
    });
    const h = new Harness([meddler], widget());

    await h.deliver();

    expect(h.record('meddler')).toMatchObject({
      failure: true,
      message: expect.stringContaining('metadata.uid, metadata.resourceVersion'),
    });
    expect(h.api.object).toMatchObject({ spec: { size: 1 } });
    expect(JSON.stringify(h.api.writes)).not.toContain('someone-else');
    expect(h.poster.withReason('HandlerFailed')).toHaveLength(1);
  });

  test('a patch setting a framework annotation is refused', async () => {
    const meddler = handler('create', 'meddler', {}, ({ patch }) => {
      patch.metadata.annotations[DIFF_BASE_KEY] = '{}';
    });
    const h = new Harness([meddler], widget());

    await h.deliver();

    expect(h.record('meddler')).toMatchObject({
      failure: true,
      message: expect.stringContaining(DIFF_BASE_KEY),
    });
  });

  test('a handler that sets forbidden fields and then throws has its patch refused too', async () => {
    const meddler = handler('create', 'meddler', {}, ({ patch }) => {
      patch.metadata.resourceVersion = '1';
      patch.status.phase = 'Broken';
      throw new Error('boom');
    });
    const h = new Harness([meddler], widget());

    await h.deliver();

    expect(JSON.stringify(h.api.writes)).not.toContain('resourceVersion');
    expect(h.api.object.status).toBeUndefined();
  });

  test('a handler that empties metadata.finalizers and then throws keeps the framework’s finalizer', async () => {
    const created = handler('create', 'created', {}, ({ patch }) => {
      patch.metadata.finalizers = [];
      throw new Error('boom');
    });
    const h = new Harness([created, handler('delete', 'deleted')], widget());

    await h.deliver();

    expect(h.api.object.metadata?.finalizers).toEqual([FINALIZER]);
  });

  test('a patch replacing metadata.finalizers keeps the framework’s finalizer', async () => {
    const created = handler('create', 'created', {}, ({ patch }) => {
      patch.metadata.finalizers = ['example.com/cleanup'];
    });
    const h = new Harness([created, handler('delete', 'deleted')], widget());

    await h.deliver();

    expect(h.api.object.metadata?.finalizers).toEqual(['example.com/cleanup', FINALIZER]);
  });
});

describe('failure records mean what the docs say', () => {
  test('a permanent failure stays recorded on the object across an operator restart', async () => {
    const broken = failing('create', 'broken', { errors: 'permanent' });
    const first = new Harness([broken, handler('resume', 'resumed')], widget());
    await first.deliver();
    expect(first.record('broken')).toMatchObject({ failure: true });

    const restarted = new Harness([broken, handler('resume', 'resumed')], first.api);
    await restarted.deliver({ fromList: true, type: 'ADDED' });

    expect(restarted.record('broken')).toMatchObject({ failure: true, message: 'boom' });
  });

  test('a `metadata.labels` field handler does not run right after the create of an object without labels', async () => {
    const created = failing('create', 'created', { errors: 'permanent' });
    const relabelled = handler('update', 'relabelled', { field: 'metadata.labels' });
    const h = new Harness([created, relabelled], widget());

    await h.deliver();
    await h.deliver();

    expect(relabelled.calls).toHaveLength(0);
    expect(h.record('created')).toMatchObject({ failure: true });
  });

  test('handler errors are logged with their stack at debug level', async () => {
    const logs = new LogCapture();
    const h = new Harness([failing('create', 'flaky')], widget(), logs.logger);

    await h.deliver();

    const line = logs.containing('handler flaky threw')[0];
    expect(line).toMatchObject({ level: 20, stack: expect.stringMatching(/Error: boom\n\s+at /) });
  });
});

describe('delays from handlers', () => {
  test('`TemporaryError` with an infinite delay is retried after the longest delay honoured, never a crash', async () => {
    const forever = handler('create', 'forever', {}, () => {
      throw new TemporaryError('later', { delay: Infinity });
    });
    const h = new Harness([forever], widget());

    const result = await h.deliver();

    expect(requeueOf(result)).toBe(MAX_TEMPORARY_DELAY_SECONDS * 1000);
    expect(h.delayOf('forever')).toBe(MAX_TEMPORARY_DELAY_SECONDS * 1000);
  });
});

describe('the operator’s attempt timeout', () => {
  test('an attempt that hangs past it is aborted and retried with backoff, freeing its slot', async () => {
    let aborted = false;
    const hung = handler(
      'create',
      'hung',
      {},
      ({ signal }) =>
        new Promise<void>(() => signal.addEventListener('abort', () => (aborted = true))),
    );
    const h = new Harness([hung], widget(), undefined, { attemptTimeoutMs: 200 });

    const delivered = h.deliver();
    await h.clock.advanceAsync(200);
    const result = await delivered;

    expect(aborted).toBe(true);
    expect(requeueOf(result)).toBe(1_000);
    expect(h.record('hung')).toMatchObject({
      retries: 1,
      message: expect.stringContaining("timed out after 0.2 s (the operator's handler timeout)"),
    });
  });
});
