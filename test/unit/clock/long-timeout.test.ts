import {
  MAX_TIMEOUT_MS,
  setLongTimeout,
  sleep,
} from '../../../src/framework/clock/long-timeout.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';

/**
 * setLongTimeout and sleep on the shared fake clock. Its timers behave like Node's here: a plain
 * setTimeout longer than 2^31-1 ms fires after 1 ms (the first spec shows it), so these specs would
 * catch a wait handed to setTimeout unchecked.
 */

const DAY_MS = 24 * 60 * 60 * 1000;
const T0 = Date.parse('2024-05-01T12:00:00.000Z');
let clock: FakeClock;

/** Milliseconds since T0. */
const elapsed = (): number => clock.now() - T0;
const advanceTo = async (ms: number): Promise<void> => {
  await clock.advanceAsync(T0 + ms - clock.now());
};

beforeEach(() => {
  clock = installFakeClock({ now: T0 });
});

afterEach(() => {
  clock.uninstall();
});

describe('the fake clock behaves like Node for overlong timeouts', () => {
  test('a plain setTimeout of 30 days fires after about 1 ms', async () => {
    const fired: number[] = [];
    setTimeout(() => fired.push(elapsed()), 30 * DAY_MS);
    await advanceTo(10);
    expect(fired).toEqual([1]);
  });
});

describe('setLongTimeout', () => {
  test('a 30-day timeout does not fire within 29 days and fires at day 30', async () => {
    const fired: number[] = [];
    setLongTimeout(() => fired.push(elapsed()), 30 * DAY_MS);
    await advanceTo(29 * DAY_MS);
    expect(fired).toEqual([]);
    await advanceTo(30 * DAY_MS);
    expect(fired).toEqual([30 * DAY_MS]);
  });

  test('a 400-day timeout fires once, exactly at day 400', async () => {
    const fired: number[] = [];
    setLongTimeout(() => fired.push(elapsed()), 400 * DAY_MS);
    await advanceTo(399 * DAY_MS);
    expect(fired).toEqual([]);
    await advanceTo(800 * DAY_MS);
    expect(fired).toEqual([400 * DAY_MS]);
  });

  test('a timeout at the limit itself fires on time', async () => {
    const fired: number[] = [];
    setLongTimeout(() => fired.push(elapsed()), MAX_TIMEOUT_MS);
    await advanceTo(MAX_TIMEOUT_MS - 1);
    expect(fired).toEqual([]);
    await advanceTo(MAX_TIMEOUT_MS);
    expect(fired).toEqual([MAX_TIMEOUT_MS]);
  });

  test('a cleared long timeout never fires, also when cleared after its first step', async () => {
    const fired: number[] = [];
    const early = setLongTimeout(() => fired.push(elapsed()), 60 * DAY_MS);
    const late = setLongTimeout(() => fired.push(elapsed()), 60 * DAY_MS);
    early.clear();
    await advanceTo(30 * DAY_MS);
    late.clear();
    await advanceTo(100 * DAY_MS);
    expect(fired).toEqual([]);
  });

  test('a negative or NaN delay fires at once, and Infinity never', async () => {
    const fired: string[] = [];
    setLongTimeout(() => fired.push('negative'), -5);
    setLongTimeout(() => fired.push('NaN'), NaN);
    setLongTimeout(() => fired.push('Infinity'), Infinity);
    await advanceTo(0);
    expect(fired).toEqual(['negative', 'NaN']);
    await advanceTo(10_000 * DAY_MS);
    expect(fired).toEqual(['negative', 'NaN']);
  });
});

describe('sleep', () => {
  test('sleeping 30 days resolves at day 30, not before', async () => {
    let woke: number | undefined;
    void sleep(30 * DAY_MS).then(() => (woke = elapsed()));
    await advanceTo(29 * DAY_MS);
    expect(woke).toBeUndefined();
    await advanceTo(31 * DAY_MS);
    expect(woke).toBe(30 * DAY_MS);
  });

  test('an abort ends a long sleep at once; an already aborted signal does not sleep at all', async () => {
    const abort = new AbortController();
    let woke: number | undefined;
    void sleep(30 * DAY_MS, abort.signal).then(() => (woke = elapsed()));
    await advanceTo(DAY_MS);
    abort.abort();
    await advanceTo(DAY_MS);
    expect(woke).toBe(DAY_MS);
    let again: number | undefined;
    void sleep(30 * DAY_MS, abort.signal).then(() => (again = elapsed()));
    await advanceTo(DAY_MS);
    expect(again).toBe(DAY_MS);
  });
});
