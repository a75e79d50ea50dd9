import { systemClock, type Clock } from '../clock/clock.js';
import { AttemptTimeoutError, withTimeLimit } from '../clock/time-limit.js';
import type { ActivityContext, ActivitySpec, ProbeOptions } from '../intents/activity-specs.js';
import { describeError } from '../intents/errors.js';

/** Kopf's probing cache: results are reused for 10 s, so frequent `/healthz` requests do not run probes each time. */
export const PROBE_MAX_AGE_MS = 10_000;
/** A probe running longer counts as failed, so a hung dependency cannot hang `/healthz`. */
export const PROBE_TIMEOUT_MS = 5_000;

/** What the probes say: each one's result (or `{ error }`) by id, and one line per failed probe. */
export interface ProbeReport {
  results: Record<string, unknown>;
  failures: string[];
}

/** One probe's outcome, with its value made JSON (a probe returning nothing shows nothing, as in Kopf). */
function outcome(id: string, value: unknown): { result?: unknown; failure?: string } {
  if (value === undefined || value === null) return {};
  try {
    const json = JSON.stringify(value);
    return json === undefined ? {} : { result: JSON.parse(json) as unknown };
  } catch (error) {
    const reason = `its result is not JSON (${describeError(error)})`;
    return { result: { error: reason }, failure: `probe ${id}: ${reason}` };
  }
}

/**
 * Runs an operator's probe handlers for `/healthz`: all at once, each within its timeout, at most
 * once per `maxAgeMs` (results, failures included, are reused in between), and once for all requests
 * that arrive while a run is under way.
 */
export class ProbeRunner {
  private cached: { report: ProbeReport; at: number } | undefined;
  private running: Promise<ProbeReport> | undefined;
  private readonly clock: Clock;
  private readonly maxAgeMs: number;

  constructor(
    private readonly probes: readonly ActivitySpec[],
    private readonly context: (spec: ActivitySpec, signal: AbortSignal) => ActivityContext,
    options: { clock?: Clock; maxAgeMs?: number } = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.maxAgeMs = options.maxAgeMs ?? PROBE_MAX_AGE_MS;
  }

  /** The latest results, run anew when older than `maxAgeMs`. */
  report(): Promise<ProbeReport> {
    if (this.cached && this.clock.now() - this.cached.at < this.maxAgeMs)
      return Promise.resolve(this.cached.report);
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<ProbeReport> {
    const outcomes = await Promise.all(
      this.probes.map(async (spec) => [spec.id, await this.runOne(spec)] as const),
    );
    const report: ProbeReport = { results: {}, failures: [] };
    for (const [id, { result, failure }] of outcomes) {
      if (result !== undefined) report.results[id] = result;
      if (failure !== undefined) report.failures.push(failure);
    }
    this.cached = { report, at: this.clock.now() };
    return report;
  }

  private async runOne(spec: ActivitySpec): Promise<{ result?: unknown; failure?: string }> {
    const seconds = (spec.options as ProbeOptions).timeout;
    const timeoutMs = seconds === undefined ? PROBE_TIMEOUT_MS : seconds * 1000;
    try {
      return outcome(
        spec.id,
        await withTimeLimit((signal) => spec.fn(this.context(spec, signal)), timeoutMs),
      );
    } catch (error) {
      const reason =
        error instanceof AttemptTimeoutError
          ? `timed out after ${timeoutMs / 1000} s`
          : describeError(error);
      return { result: { error: reason }, failure: `probe ${spec.id}: ${reason}` };
    }
  }
}
