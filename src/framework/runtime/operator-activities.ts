import type { ApiClient } from '../api/api-client.js';
import { exponentialDelayMs } from '../clock/backoff.js';
import { systemClock, type Clock } from '../clock/clock.js';
import { AttemptTimeoutError, withTimeLimit } from '../clock/time-limit.js';
import type {
  ActivityContext,
  ActivityKind,
  ActivitySpec,
  CleanupOptions,
  StartupOptions,
} from '../intents/activity-specs.js';
import { asError, describeError, PermanentError, TemporaryError } from '../intents/errors.js';
import type { Logger } from '../observability/logger.js';
import { ProbeRunner, type ProbeReport } from './probes.js';

/** Default startup backoff: 1 s doubling per attempt, at most 60 s (as change handlers). */
const BACKOFF_INITIAL_MS = 1_000;
const BACKOFF_MAX_MS = 60_000;

/**
 * A startup handler failed for good (`PermanentError`, its `retries` used up, or its `timeout`
 * passed), so the operator does not start: `Operator.ready` rejects with it and `konductor run`
 * exits with code 1 and its message. `cause` is the handler's last error.
 */
export class StartupError extends Error {
  /** Always `'StartupError'`. */
  override readonly name = 'StartupError';

  constructor(
    /** The id of the startup handler that failed. */
    readonly handler: string,
    reason: string,
    options: { cause: unknown },
  ) {
    super(`startup handler ${handler} failed, so the operator does not start: ${reason}`, options);
  }
}

/** After a failed startup attempt: retry after a delay, or give up (with the reason). */
export type StartupRetry = { retryInMs: number } | { giveUp: string };

/**
 * What follows the `attempts`-th failed attempt of a startup handler (pure): Kopf's rules for
 * `retries` (attempts in all), `timeout` (since the first attempt, looking ahead at the next delay)
 * and `backoff`; `TemporaryError` brings its own delay, `PermanentError` gives up at once.
 */
export function startupRetry(
  error: Error,
  attempts: number,
  elapsedMs: number,
  options: StartupOptions,
): StartupRetry {
  const message = describeError(error);
  if (error instanceof PermanentError) return { giveUp: message };
  if (options.retries !== undefined && attempts >= options.retries)
    return { giveUp: `gave up after ${attempts} attempt(s): ${message}` };
  const delayMs =
    error instanceof TemporaryError
      ? error.delay * 1000
      : options.backoff !== undefined
        ? options.backoff * 1000
        : exponentialDelayMs(attempts, BACKOFF_INITIAL_MS, BACKOFF_MAX_MS);
  if (options.timeout !== undefined && elapsedMs + delayMs >= options.timeout * 1000) {
    return {
      giveUp: `ran past its timeout of ${options.timeout} s (${attempts} attempt(s)): ${message}`,
    };
  }
  return { retryInMs: delayMs };
}

/** What activity handlers get from the operator. @internal */
export interface ActivityServices {
  client: ApiClient;
  logger: Logger;
  /** The operator memo (see `operatorMemo`). */
  memo: Record<string, unknown>;
  clock?: Clock;
  /** Probe results are reused for this long. Default 10 s (Kopf). */
  probeMaxAgeMs?: number;
}

/**
 * An operator's activities: its startup handlers (before anything else), its cleanup handlers (at the
 * end of a stop) and its probes (on `/healthz`). `specs` is read when each activity runs, so handlers
 * added to the registry before `start()` count. @internal
 */
export class OperatorActivities {
  private readonly stopping = new AbortController();
  private started = false;
  private cleanedUp = false;
  /** Why the start was stopped, once a startup handler failed for good. */
  private failure: string | undefined;
  private probeRunner: ProbeRunner | undefined;
  private readonly clock: Clock;

  constructor(
    private readonly specs: () => readonly ActivitySpec[],
    private readonly services: ActivityServices,
  ) {
    this.clock = services.clock ?? systemClock;
  }

  private of(kind: ActivityKind): ActivitySpec[] {
    return this.specs().filter((spec) => spec.kind === kind);
  }

  private context(spec: ActivitySpec, signal: AbortSignal, retry: number): ActivityContext {
    const logger = this.services.logger.child({ activity: spec.kind, handler: spec.id });
    return { memo: this.services.memo, logger, client: this.services.client, signal, retry };
  }

  /** Whether every startup handler has succeeded (then probes run, and cleanup runs on stop). */
  get startupDone(): boolean {
    return this.started;
  }

  /**
   * Runs the startup handlers one after another, each until it succeeds. Resolves `true` when all
   * did, `false` when {@link abort} came first.
   * @throws {@link StartupError} (rejects) when one fails for good.
   */
  async startup(): Promise<boolean> {
    for (const spec of this.of('startup')) {
      if (!(await this.startOne(spec))) return false;
    }
    this.started = !this.stopping.signal.aborted;
    return this.started;
  }

  private async startOne(spec: ActivitySpec): Promise<boolean> {
    const options = spec.options as StartupOptions;
    const firstAt = this.clock.now();
    for (let attempts = 1; ; attempts++) {
      if (this.stopping.signal.aborted) return false;
      const left =
        options.timeout === undefined
          ? undefined
          : Math.max(1, options.timeout * 1000 - (this.clock.now() - firstAt));
      let failure: Error;
      try {
        await withTimeLimit(
          (signal) => spec.fn(this.context(spec, signal, attempts - 1)),
          left,
          this.stopping.signal,
        );
        if (attempts > 1)
          this.services.logger.info(
            { activity: 'startup', handler: spec.id, attempts },
            `startup handler ${spec.id} succeeded`,
          );
        return true;
      } catch (thrown) {
        failure =
          thrown instanceof AttemptTimeoutError
            ? new PermanentError(`timed out after ${options.timeout} s (its timeout option)`, {
                cause: thrown,
              })
            : asError(thrown);
      }
      if (this.stopping.signal.aborted) return false;
      const next = startupRetry(failure, attempts, this.clock.now() - firstAt, options);
      if ('giveUp' in next) {
        const error = new StartupError(spec.id, next.giveUp, { cause: failure });
        this.failure = error.message;
        throw error;
      }
      this.services.logger.warn(
        {
          activity: 'startup',
          handler: spec.id,
          attempts,
          retryInMs: next.retryInMs,
          err: describeError(failure),
        },
        `startup handler ${spec.id} failed (${describeError(failure)}); retrying in ${next.retryInMs / 1000} s`,
      );
      await this.clock.sleep(next.retryInMs, this.stopping.signal);
    }
  }

  /** Stops a startup under way: the attempt's `signal` aborts and no further attempt is made. */
  abort(): void {
    this.stopping.abort(new Error('the operator is stopping'));
  }

  /**
   * Runs the cleanup handlers one after another, if startup had completed, within `budgetMs` (what is
   * left of the stop deadline); each handler's `timeout` narrows it. Errors and timeouts are logged,
   * never thrown: a stop always goes on.
   */
  async cleanup(budgetMs: number): Promise<void> {
    if (!this.started || this.cleanedUp) return;
    this.cleanedUp = true;
    const endAt = this.clock.now() + budgetMs;
    for (const spec of this.of('cleanup')) {
      const leftMs = endAt - this.clock.now();
      const log = this.services.logger.child({ activity: 'cleanup', handler: spec.id });
      if (leftMs <= 0) {
        log.warn(`cleanup handler ${spec.id} not run: the stop deadline has passed`);
        continue;
      }
      const own = (spec.options as CleanupOptions).timeout;
      const limitMs = own === undefined ? leftMs : Math.min(leftMs, own * 1000);
      try {
        await withTimeLimit(
          (signal) => spec.fn(this.context(spec, signal, 0)),
          Math.max(1, limitMs),
        );
      } catch (error) {
        const reason =
          error instanceof AttemptTimeoutError
            ? `did not finish within ${Math.round(limitMs) / 1000} s; its signal was aborted`
            : describeError(error);
        log.error({ err: reason }, `cleanup handler ${spec.id} failed: ${reason}`);
      }
    }
  }

  /** The `/readyz` check: not ready until every startup handler has succeeded, saying which failed. */
  readiness(): { ok: true } | { ok: false; reason: string } {
    if (this.started) return { ok: true };
    return { ok: false, reason: this.failure ?? 'startup handlers are running' };
  }

  /** Whether there are probe handlers (then `/healthz` answers JSON). */
  get hasProbes(): boolean {
    return this.of('probe').length > 0;
  }

  /** The probes' results for `/healthz` (cached); none before startup has completed. */
  probeReport(): Promise<ProbeReport> {
    if (!this.started) return Promise.resolve({ results: {}, failures: [] });
    this.probeRunner ??= new ProbeRunner(
      this.of('probe'),
      (spec, signal) => this.context(spec, signal, 0),
      {
        clock: this.clock,
        maxAgeMs: this.services.probeMaxAgeMs,
      },
    );
    return this.probeRunner.report();
  }
}
