/**
 * The framework's one exponential curve: `initialMs` for the first attempt, times `factor` for each
 * attempt after it, never above `maxMs`. Pure, so retry schedules are tested without timers.
 */
export function exponentialDelayMs(
  attempt: number,
  initialMs: number,
  maxMs: number,
  factor = 2,
): number {
  const step = Math.max(0, Math.floor(attempt) - 1);
  return Math.min(maxMs, initialMs * factor ** step);
}

/** Settings for {@link Backoff}; the defaults are client-go's reflector numbers. */
export interface BackoffOptions {
  initialMs?: number;
  factor?: number;
  maxMs?: number;
  /** Adds up to `jitter × delay` at random, like client-go's `wait.Jitter`. */
  jitter?: number;
  /** Start over from `initialMs` after this long without a failure. */
  resetAfterMs?: number;
  random?: () => number;
  now?: () => number;
}

/**
 * Exponential backoff: 0.8 s doubling, capped at 30 s before jitter (so delays settle in [30, 60) s),
 * reset after 2 minutes without failures.
 */
export class Backoff {
  private readonly initialMs: number;
  private readonly factor: number;
  private readonly maxMs: number;
  private readonly jitter: number;
  private readonly resetAfterMs: number;
  private readonly random: () => number;
  private readonly now: () => number;
  private current: number;
  private lastFailureAt: number | undefined;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 800;
    this.factor = options.factor ?? 2;
    this.maxMs = options.maxMs ?? 30_000;
    this.jitter = options.jitter ?? 1;
    this.resetAfterMs = options.resetAfterMs ?? 120_000;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    this.current = this.initialMs;
  }

  /** The delay before the next attempt after a failure now. */
  next(): number {
    const now = this.now();
    if (this.lastFailureAt !== undefined && now - this.lastFailureAt >= this.resetAfterMs)
      this.current = this.initialMs;
    this.lastFailureAt = now;
    const base = this.current;
    this.current = exponentialDelayMs(2, this.current, this.maxMs, this.factor);
    return base + this.random() * this.jitter * base;
  }

  /** Forgets past failures. */
  reset(): void {
    this.current = this.initialMs;
    this.lastFailureAt = undefined;
  }
}
