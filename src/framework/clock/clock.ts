import { setLongTimeout, sleep, type LongTimeout } from './long-timeout.js';

/**
 * The framework's one clock: what time it is, and waits of any length. Components take a `Clock`
 * option (default {@link systemClock}) so a test can drive them with one fake clock instead of each
 * keeping its own `now` and sleep helper.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Resolves after `ms` (any length, past setTimeout's 24.8-day limit), or as soon as `signal` aborts; never rejects. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` once after `ms` (any length); `clear()` cancels. */
  setTimeout(fn: () => void, ms: number): LongTimeout;
}

/**
 * The real clock. It reads `Date.now` and the global timers at call time, so jest's modern fake timers
 * drive it as well.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleep(ms, signal),
  setTimeout: (fn, ms) => setLongTimeout(fn, ms),
};
