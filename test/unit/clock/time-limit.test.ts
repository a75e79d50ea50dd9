import { AttemptTimeoutError, withTimeLimit } from '../../../src/framework/clock/time-limit.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';

/** withTimeLimit on the shared fake clock: the operator's default handler timeout for one attempt. */

const never = (): Promise<never> => new Promise<never>(() => undefined);

let clock: FakeClock;

beforeEach(() => {
  clock = installFakeClock();
});

afterEach(() => {
  clock.uninstall();
});

describe('withTimeLimit', () => {
  test('an attempt past the limit is abandoned: its signal aborts with an AttemptTimeoutError, and the caller gets that error at once', async () => {
    let seen: AbortSignal | undefined;
    const outcome = withTimeLimit((signal) => {
      seen = signal;
      return never();
    }, 5_000).catch((error: unknown) => error);
    await clock.advanceAsync(4_999);
    expect(seen?.aborted).toBe(false);
    await clock.advanceAsync(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(AttemptTimeoutError);
    expect((error as Error).message).toBe(
      "timed out after 5 s (the operator's handler timeout); its signal was aborted",
    );
    expect(seen?.reason).toBe(error);
  });

  test('an attempt within the limit returns its value, and what it throws reaches the caller unchanged', async () => {
    await expect(withTimeLimit(async () => 'done', 5_000)).resolves.toBe('done');
    await expect(withTimeLimit(() => Promise.reject(new Error('boom')), 5_000)).rejects.toThrow(
      'boom',
    );
    await expect(
      withTimeLimit(() => {
        throw new Error('thrown synchronously');
      }, 5_000),
    ).rejects.toThrow('thrown synchronously');
  });

  test('without a limit (undefined or 0) a slow attempt is waited for', async () => {
    for (const limit of [undefined, 0]) {
      const outcome = withTimeLimit(() => clock.sleep(86_400_000).then(() => 'late'), limit);
      await clock.advanceAsync(86_400_000);
      await expect(outcome).resolves.toBe('late');
    }
  });

  test("the caller's signal aborting aborts the attempt's signal too, without abandoning the attempt", async () => {
    const stop = new AbortController();
    let seen: AbortSignal | undefined;
    let finished = false;
    const outcome = withTimeLimit(
      (signal) => {
        seen = signal;
        return new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => clock.setTimeout(resolve, 100), { once: true }),
        );
      },
      5_000,
      stop.signal,
    ).then(() => (finished = true));
    stop.abort();
    expect(seen?.aborted).toBe(true);
    await clock.advanceAsync(99);
    expect(finished).toBe(false);
    await clock.advanceAsync(1);
    await outcome;
    expect(finished).toBe(true);
  });

  test('an abandoned attempt that rejects later causes no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const outcome = withTimeLimit(
        () =>
          new Promise((_, reject) =>
            clock.setTimeout(() => reject(new Error('late failure')), 10_000),
          ),
        1_000,
      ).catch((error: unknown) => error);
      await clock.advanceAsync(1_000);
      expect(await outcome).toBeInstanceOf(AttemptTimeoutError);
      await clock.advanceAsync(10_000);
      await new Promise((resolve) => process.nextTick(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  test('a limit longer than setTimeout allows (30 days) is honoured', async () => {
    const day = 86_400_000;
    let settled = false;
    const outcome = withTimeLimit(never, 30 * day).catch(() => (settled = true));
    await clock.advanceAsync(29 * day);
    expect(settled).toBe(false);
    await clock.advanceAsync(day);
    await outcome;
    expect(settled).toBe(true);
  });
});
