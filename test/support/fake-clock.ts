/**
 * The one fake clock for specs: jest's modern fake timers, seen through the framework's {@link Clock}.
 *
 * Installing it fakes `Date`, the global timers and `performance` (not `process.nextTick` or
 * `queueMicrotask`, so promises and streams keep working). The framework's `systemClock` reads
 * `Date.now` and the global timers at call time, so code on its default clock and code handed this
 * clock see the same time. `advance` moves time and runs the timers due; `advanceAsync` also lets the
 * promise callbacks they start run between timers, which is what async code under test needs; `until`
 * waits for a condition while real I/O (a fake API server's answers) catches up, time held still or
 * moving a step at a time.
 *
 * ```ts
 * let clock: FakeClock;
 * beforeEach(() => { clock = installFakeClock({ now: '2024-05-01T12:00:00Z' }); });
 * afterEach(() => clock.uninstall());
 * ```
 */
import { jest } from '@jest/globals';
import type { Clock } from '../../src/framework/clock/clock.js';
import { systemClock } from '../../src/framework/clock/clock.js';

/** The framework's clock on jest's fake timers, with the controls a spec needs. */
export interface FakeClock extends Clock {
  /** Moves time on by `ms`, running every timer due on the way (synchronously). */
  advance(ms: number): void;
  /** Moves time on by `ms`, running timers due and the promise callbacks between them. */
  advanceAsync(ms: number): Promise<void>;
  /** Sets the current time without running timers (a wall-clock jump). */
  setNow(time: number | string | Date): void;
  /**
   * Waits until `condition` holds, checking it after each real event-loop turn (so I/O and promise
   * callbacks run) and moving time on by `stepMs` per turn after the first: 0 (the default) holds
   * time still while I/O catches up; 1 lets the timers the condition waits on fire, to the
   * millisecond. Fails naming `what` after `timeoutMs` of real time (default 30 s), the guard
   * against a condition that never comes.
   */
  until(
    condition: () => unknown,
    what: string,
    options?: { stepMs?: number; timeoutMs?: number },
  ): Promise<void>;
  /** Number of timers waiting to fire. */
  pendingTimers(): number;
  /** Back to real timers. */
  uninstall(): void;
}

export interface FakeClockOptions {
  /** Starting time (epoch ms, ISO string or Date); default: the real time now. */
  now?: number | string | Date;
}

/** The real `Date.now`, taken before any spec installs fake timers: `until`'s guard runs on it. */
const realNow = Date.now;

function epochMs(time: number | string | Date): number {
  return typeof time === 'number' ? time : new Date(time).getTime();
}

/** Installs jest's modern fake timers and returns them as a {@link FakeClock}. */
export function installFakeClock(options: FakeClockOptions = {}): FakeClock {
  jest.useFakeTimers({
    doNotFake: ['nextTick', 'queueMicrotask'],
    ...(options.now === undefined ? {} : { now: epochMs(options.now) }),
  });
  return {
    now: () => systemClock.now(),
    sleep: (ms, signal) => systemClock.sleep(ms, signal),
    setTimeout: (fn, ms) => systemClock.setTimeout(fn, ms),
    advance: (ms) => {
      jest.advanceTimersByTime(ms);
    },
    advanceAsync: async (ms) => {
      await jest.advanceTimersByTimeAsync(ms);
    },
    setNow: (time) => {
      jest.setSystemTime(epochMs(time));
    },
    until: async (condition, what, { stepMs = 0, timeoutMs = 30_000 } = {}) => {
      const deadline = realNow() + timeoutMs;
      for (let turn = 0; !condition(); turn += 1) {
        if (realNow() > deadline)
          throw new Error(`timed out after ${timeoutMs} ms (real time) waiting for ${what}`);
        // The first turn holds time still: what is already under way may meet the condition by itself.
        await jest.advanceTimersByTimeAsync(turn === 0 ? 0 : stepMs);
      }
    },
    pendingTimers: () => jest.getTimerCount(),
    uninstall: uninstallFakeClock,
  };
}

/** Back to real timers (safe to call when no fake clock is installed): for an `afterEach`. */
export function uninstallFakeClock(): void {
  jest.useRealTimers();
}
