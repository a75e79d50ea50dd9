import {
  Backoff,
  exponentialDelayMs,
  type BackoffOptions,
} from '../../../src/framework/clock/backoff.js';

/** A Backoff on a clock the test moves, with a fixed "random" draw. */
function backoff(options: BackoffOptions & { draw?: number } = {}): {
  backoff: Backoff;
  advance(ms: number): void;
} {
  let now = 1_000_000;
  const { draw = 0, ...rest } = options;
  return {
    backoff: new Backoff({ random: () => draw, now: () => now, ...rest }),
    advance: (ms) => {
      now += ms;
    },
  };
}

function delays(b: Backoff, count: number): number[] {
  return Array.from({ length: count }, () => b.next());
}

describe('Backoff', () => {
  test('doubles from 800 ms and is capped at 30 s before jitter', () => {
    const { backoff: b } = backoff();

    expect(delays(b, 9)).toEqual([
      800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000, 30_000,
    ]);
  });

  test('jitter adds up to jitter × delay (default jitter 1, so capped delays settle in [30, 60) s)', () => {
    expect(delays(backoff({ draw: 0.5 }).backoff, 3)).toEqual([1_200, 2_400, 4_800]);
    expect(delays(backoff({ draw: 0.5, jitter: 0.2 }).backoff, 2)).toEqual([880, 1_760]);

    const capped = backoff({ draw: 0.999 }).backoff;
    const last = delays(capped, 8).at(-1)!;
    expect(last).toBeGreaterThanOrEqual(30_000);
    expect(last).toBeLessThan(60_000);
  });

  test('starts over from 800 ms after 2 minutes without failures', () => {
    const { backoff: b, advance } = backoff();
    delays(b, 3);

    advance(119_999);
    expect(b.next()).toBe(6_400);

    advance(120_000);
    expect(delays(b, 2)).toEqual([800, 1_600]);
  });

  test('reset() starts over', () => {
    const { backoff: b } = backoff();
    delays(b, 4);

    b.reset();

    expect(delays(b, 2)).toEqual([800, 1_600]);
  });

  test('initial delay, factor and cap are configurable', () => {
    const { backoff: b } = backoff({ initialMs: 10, factor: 3, maxMs: 100 });

    expect(delays(b, 5)).toEqual([10, 30, 90, 100, 100]);
  });
});

describe('exponentialDelayMs', () => {
  it('starts at the initial delay and doubles per attempt up to the cap', () => {
    expect(
      [1, 2, 3, 4, 5, 6, 7].map((attempt) => exponentialDelayMs(attempt, 1_000, 30_000)),
    ).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
  });

  it('treats attempt 0 and below as the first attempt', () => {
    expect(exponentialDelayMs(0, 500, 10_000)).toBe(500);
    expect(exponentialDelayMs(-3, 500, 10_000)).toBe(500);
  });
});
