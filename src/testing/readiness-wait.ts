import { systemClock, type Clock } from '../framework/clock/clock.js';

/** What one readiness check saw. */
export interface ReadinessAnswer {
  /** Whether the program is ready. */
  ready: boolean;
  /** What the check saw, as the error quotes it: `/readyz answered 500`, `connect ECONNREFUSED …`. */
  seen: string;
}

/** Options of {@link waitUntilReady}. */
export interface ReadinessWaitOptions {
  /** The program, as errors name it. */
  name: string;
  check: () => Promise<ReadinessAnswer>;
  /** False once the program has exited: the wait fails at once. */
  alive: () => boolean;
  /** Another sign of progress, e.g. the size of the program's log: a change counts as progress. */
  progress?: () => number;
  /** Give up after this long without progress (no new answer, no change of `progress`). */
  stallMs: number;
  /** Give up after this long whatever happens. */
  ceilingMs: number;
  /** Between checks. Default 100 ms. */
  intervalMs?: number;
  clock?: Clock;
}

/** A program did not become ready: it exited, stopped making progress, or reached the ceiling. */
export class ReadinessError extends Error {
  override readonly name = 'ReadinessError';
}

/**
 * Waits until `check` answers ready, for as long as the program is alive and makes progress: a new
 * answer or a change of `progress` (its log growing) restarts the `stallMs` window, up to `ceilingMs`
 * in all. A start slowed down by a loaded machine keeps logging and so keeps its time; one that hangs
 * fails after `stallMs`. The error says what the check last saw and how long ago anything changed.
 */
export async function waitUntilReady(options: ReadinessWaitOptions): Promise<void> {
  const clock = options.clock ?? systemClock;
  const startedAt = clock.now();
  let changedAt = startedAt;
  let seen = '(no answer yet)';
  let progress = options.progress?.();
  for (;;) {
    if (!options.alive())
      throw new ReadinessError(`${options.name} exited during start-up (last seen: ${seen})`);
    const answer = await options.check().catch((error: unknown): ReadinessAnswer => ({
      ready: false,
      seen: error instanceof Error ? error.message : String(error),
    }));
    if (answer.ready) return;
    const now = clock.now();
    const nextProgress = options.progress?.();
    if (answer.seen !== seen || nextProgress !== progress) changedAt = now;
    seen = answer.seen;
    progress = nextProgress;
    const last = `last seen: ${seen}, ${now - changedAt} ms after the last change${progress === undefined ? '' : `; log at ${progress} bytes`}`;
    if (now - changedAt >= options.stallMs) {
      throw new ReadinessError(
        `${options.name} was not ready and made no progress for ${options.stallMs} ms (${last}); raise startTimeoutMs if the machine is that slow`,
      );
    }
    if (now - startedAt >= options.ceilingMs) {
      throw new ReadinessError(
        `${options.name} was not ready within ${options.ceilingMs} ms although still making progress (${last})`,
      );
    }
    await clock.sleep(options.intervalMs ?? 100);
  }
}
