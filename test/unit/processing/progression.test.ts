import {
  HandlerRetriesError,
  HandlerTimeoutError,
  PermanentError,
  TemporaryError,
} from '../../../src/framework/intents/errors.js';
import type { ChangeHandlerOptions } from '../../../src/framework/intents/handler-specs.js';
import { FINALIZER } from '../../../src/framework/state/keys.js';
import type { ProgressRecord } from '../../../src/framework/state/progress.js';
import {
  attemptStart,
  completion,
  failureMessage,
  handlerStep,
  nextRecord,
  recordForChange,
  remainingMs,
  verdictAfterAttempt,
  verdictBeforeAttempt,
  type Change,
  type Verdict,
} from '../../../src/framework/processing/progression.js';
import { widget } from '../../support/widget-objects.js';
import { handler } from './change-processor-harness.js';

const NOW = Date.parse('2024-05-01T12:00:00.000Z');
const SECOND = 1_000;
const CREATE: Change = { reason: 'create', tag: 'new.0123abcd', resuming: false };
const iso = (ms: number): string => new Date(ms).toISOString();

function creating(options: ChangeHandlerOptions = {}) {
  return handler('create', 'make', options);
}

function deleting(options: ChangeHandlerOptions = {}) {
  return handler('delete', 'cleanup', options);
}

describe('recordForChange', () => {
  const stored: ProgressRecord = {
    started: iso(NOW),
    purpose: 'create',
    base: CREATE.tag,
    retries: 1,
  };

  test('a record of this cause and this diff-base counts', () => {
    expect(recordForChange(creating(), stored, CREATE)).toBe(stored);
  });

  test("a record of another change (another diff-base's tag) does not count", () => {
    expect(
      recordForChange(creating(), { ...stored, base: 'abcdef012345' }, CREATE),
    ).toBeUndefined();
  });

  test('a record of another cause does not count', () => {
    expect(recordForChange(creating(), { ...stored, purpose: 'update' }, CREATE)).toBeUndefined();
  });

  test("a delete handler's final failure is forgotten by a resuming process, so a fixed operator tries it once more", () => {
    const change: Change = { reason: 'delete', tag: CREATE.tag, resuming: true };
    const failed: ProgressRecord = { ...stored, purpose: 'delete', failure: true };

    expect(recordForChange(deleting(), failed, change)).toBeUndefined();
    expect(recordForChange(deleting(), failed, { ...change, resuming: false })).toBe(failed);
    expect(recordForChange(deleting({ optional: true }), failed, change)).toBe(failed);
  });
});

describe('handlerStep', () => {
  const result = {
    patch: { metadata: { labels: {}, annotations: {} }, spec: {}, status: {} },
    record: { success: true },
  };

  test('a finished handler keeps its record, whether it succeeded or failed for good', () => {
    expect(handlerStep({ success: true }, undefined, NOW)).toEqual({
      step: 'finished',
      record: { success: true },
    });
    expect(handlerStep({ failure: true }, result, NOW)).toEqual({
      step: 'finished',
      record: { failure: true },
    });
  });

  test('a result that could not be written is reused instead of running the handler again', () => {
    expect(handlerStep({ delayed: iso(NOW + 5 * SECOND) }, result, NOW)).toEqual({
      step: 'unwritten',
      result,
    });
  });

  test('a handler whose delay has not passed waits the rest of it', () => {
    const record = { delayed: iso(NOW + 5 * SECOND) };

    expect(handlerStep(record, undefined, NOW)).toEqual({
      step: 'delayed',
      record,
      delayMs: 5 * SECOND,
    });
  });

  test('a handler without a record, or past its delay, runs now', () => {
    expect(handlerStep(undefined, undefined, NOW)).toEqual({ step: 'run', record: undefined });
    const due = { delayed: iso(NOW - SECOND), retries: 2 };
    expect(handlerStep(due, undefined, NOW)).toEqual({ step: 'run', record: due });
  });
});

describe('attemptStart', () => {
  test('a first attempt starts now, with no retries before it', () => {
    expect(attemptStart(undefined, CREATE, NOW)).toEqual({
      startedAt: NOW,
      retries: 0,
      base: { started: iso(NOW), purpose: 'create', base: CREATE.tag },
    });
  });

  test('a later attempt keeps the first attempt’s start and counts the retries so far', () => {
    const start = attemptStart({ started: iso(NOW - 30 * SECOND), retries: 3 }, CREATE, NOW);

    expect(start.startedAt).toBe(NOW - 30 * SECOND);
    expect(start.retries).toBe(3);
  });

  test('a start in the future (forged or skewed) is clamped to now, so it cannot stretch the timeout', () => {
    expect(attemptStart({ started: iso(NOW + 3_600 * SECOND) }, CREATE, NOW).startedAt).toBe(NOW);
  });
});

describe('verdictBeforeAttempt', () => {
  test('a handler that used up its `retries` fails for good without an attempt', () => {
    const verdict = verdictBeforeAttempt(
      creating({ retries: 2 }),
      { startedAt: NOW, retries: 2, base: {} },
      NOW,
    );

    expect(verdict).toEqual({ verdict: 'permanent', error: expect.any(HandlerRetriesError) });
    expect(verdict?.verdict === 'permanent' && verdict.error.message).toBe(
      'gave up after 2 attempts',
    );
  });

  test('a handler past its `timeout` since the first attempt fails for good without an attempt', () => {
    const verdict = verdictBeforeAttempt(
      creating({ timeout: 5 }),
      { startedAt: NOW - 5 * SECOND, retries: 1, base: {} },
      NOW,
    );

    expect(verdict).toEqual({ verdict: 'permanent', error: expect.any(HandlerTimeoutError) });
    expect(verdict?.verdict === 'permanent' && verdict.error.message).toBe('timed out after 5 s');
  });

  test('otherwise the attempt is made, with what is left of the timeout', () => {
    const start = { startedAt: NOW - 2 * SECOND, retries: 1, base: {} };

    expect(verdictBeforeAttempt(creating({ retries: 2, timeout: 5 }), start, NOW)).toBeUndefined();
    expect(remainingMs(creating({ timeout: 5 }), start, NOW)).toBe(3 * SECOND);
    expect(remainingMs(creating(), start, NOW)).toBeUndefined();
  });
});

describe('verdictAfterAttempt', () => {
  const after = (
    options: ChangeHandlerOptions,
    error: Error | undefined,
    attempts = 1,
    startedAt = NOW,
  ): Verdict => verdictAfterAttempt(creating(options), error, attempts, startedAt, NOW);

  test('nothing thrown is a success', () => {
    expect(after({}, undefined)).toEqual({ verdict: 'success' });
  });

  test('a plain error is retried after 1 s, 2 s, 4 s … doubling up to 60 s', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8].map((attempts) => {
      const verdict = after({}, new Error('boom'), attempts);
      return verdict.verdict === 'temporary' ? verdict.delaySeconds : undefined;
    });

    expect(delays).toEqual([1, 2, 4, 8, 16, 32, 60, 60]);
  });

  test('`backoff` replaces the doubling delay', () => {
    expect(after({ backoff: 7 }, new Error('boom'), 5)).toMatchObject({
      verdict: 'temporary',
      delaySeconds: 7,
    });
  });

  test("a TemporaryError's own delay wins over `backoff`", () => {
    expect(after({ backoff: 7 }, new TemporaryError('later', { delay: 0 }))).toMatchObject({
      verdict: 'temporary',
      delaySeconds: 0,
    });
  });

  test("`errors: 'permanent'` makes a plain error final, `errors: 'ignored'` a success", () => {
    expect(after({ errors: 'permanent' }, new Error('boom'))).toMatchObject({
      verdict: 'permanent',
    });
    expect(after({ errors: 'ignored' }, new Error('boom'))).toMatchObject({ verdict: 'ignored' });
  });

  test("a TemporaryError is retried even with `errors: 'permanent'`", () => {
    expect(after({ errors: 'permanent' }, new TemporaryError('later'))).toMatchObject({
      verdict: 'temporary',
      delaySeconds: 60,
    });
  });

  test("a PermanentError is final even with `errors: 'ignored'`", () => {
    const error = new PermanentError('no');

    expect(after({ errors: 'ignored' }, error)).toEqual({ verdict: 'permanent', error });
  });

  test('the last allowed attempt failing gives up, saying why', () => {
    const verdict = after({ retries: 3 }, new Error('boom'), 3);

    expect(verdict).toEqual({ verdict: 'permanent', error: expect.any(HandlerRetriesError) });
    expect(verdict.verdict === 'permanent' && verdict.error.message).toBe(
      'boom (gave up after 3 attempts)',
    );
  });

  test('a retry that would start past the timeout fails for good at once', () => {
    const verdict = after({ timeout: 5 }, new Error('boom'), 3, NOW - 4 * SECOND);

    expect(verdict).toEqual({ verdict: 'permanent', error: expect.any(HandlerTimeoutError) });
    expect(verdict.verdict === 'permanent' && verdict.error.message).toBe(
      'boom (would exceed its 5 s timeout)',
    );
  });
});

describe('nextRecord', () => {
  const base: ProgressRecord = { started: iso(NOW - SECOND), purpose: 'create', base: CREATE.tag };

  test('a success (or an ignored error) is finished now, with the attempts made', () => {
    const expected = { ...base, stopped: iso(NOW), success: true, retries: 2 };

    expect(nextRecord({ verdict: 'success' }, { base, attempts: 2, now: NOW })).toEqual(expected);
    expect(
      nextRecord({ verdict: 'ignored', error: new Error('x') }, { base, attempts: 2, now: NOW }),
    ).toEqual(expected);
  });

  test('a retry is delayed by its delay, with the error as its message', () => {
    const verdict: Verdict = { verdict: 'temporary', error: new Error('boom'), delaySeconds: 4 };

    expect(nextRecord(verdict, { base, attempts: 3, now: NOW })).toEqual({
      ...base,
      delayed: iso(NOW + 4 * SECOND),
      retries: 3,
      message: 'boom',
    });
  });

  test('a final failure is finished now, with its final message', () => {
    const verdict: Verdict = { verdict: 'permanent', error: new Error('boom') };

    expect(
      nextRecord(verdict, { base, attempts: 1, now: NOW, finalMessage: 'boom; and why' }),
    ).toEqual({
      ...base,
      stopped: iso(NOW),
      failure: true,
      retries: 1,
      message: 'boom; and why',
    });
  });

  test('the record keeps its fields in the stored order, so an unchanged record is not rewritten', () => {
    const record = nextRecord(
      { verdict: 'temporary', error: new Error('boom'), delaySeconds: 1 },
      { base, attempts: 1, now: NOW },
    );

    expect(Object.keys(record)).toEqual([
      'started',
      'purpose',
      'base',
      'delayed',
      'retries',
      'message',
    ]);
  });
});

describe('failureMessage', () => {
  const object = widget();

  test('is the error for most handlers', () => {
    expect(failureMessage(creating(), 'create', object, new Error('boom'))).toBe('boom');
  });

  test('says the object stays, and how it can go, for a delete handler that keeps it', () => {
    const message = failureMessage(deleting(), 'delete', object, new Error('boom'));

    expect(message).toMatch(/^boom; default\/w1 keeps the finalizer /);
    expect(message).toContain(FINALIZER);
    expect(failureMessage(deleting({ optional: true }), 'delete', object, new Error('boom'))).toBe(
      'boom',
    );
  });
});

describe('completion', () => {
  test('is done when every selected handler finished, one way or the other', () => {
    const records = new Map<string, ProgressRecord>([
      ['make', { success: true }],
      ['other', { failure: true }],
    ]);

    expect(completion([creating(), handler('create', 'other')], records, 'create')).toEqual({
      done: true,
      blocked: false,
    });
  });

  test('is not done while a handler is pending', () => {
    const records = new Map<string, ProgressRecord>([['make', { delayed: iso(NOW) }]]);

    expect(completion([creating()], records, 'create')).toEqual({ done: false, blocked: false });
  });

  test('is blocked when a delete handler that keeps the object failed for good: only success lets the finalizer go', () => {
    const records = new Map<string, ProgressRecord>([['cleanup', { failure: true }]]);

    expect(completion([deleting()], records, 'delete')).toEqual({ done: true, blocked: true });
    expect(completion([deleting({ optional: true })], records, 'delete')).toEqual({
      done: true,
      blocked: false,
    });
  });
});
