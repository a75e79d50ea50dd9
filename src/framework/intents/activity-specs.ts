import type { ApiClient } from '../api/api-client.js';
import type { Logger } from '../observability/logger.js';

/**
 * What an activity handler (`@on.startup`, `@on.cleanup`, `@on.probe`) receives: operator-wide, with
 * no object. `memo` is the operator memo (`createOperator({ memo })`): what a startup handler puts
 * there, every handler of the process sees.
 */
export interface ActivityContext {
  /** The operator memo, one object for the whole process. */
  memo: Record<string, unknown>;
  /** A logger bound to this activity and handler (`activity`, `handler`). */
  logger: Logger;
  /** The operator's API client (same credentials and connections as its handlers). */
  client: ApiClient;
  /** Aborted when the attempt times out or the operator stops. */
  signal: AbortSignal;
  /** Startup handlers: attempts before this one (0 on the first); always 0 for cleanup and probes. */
  retry: number;
}

/** An activity handler function; a probe's return value (JSON) is its result on `/healthz`. */
export type ActivityFn = (context: ActivityContext) => unknown;

/** Options of every activity handler. */
export interface ActivityOptions {
  /** Stable id; defaults to `Class.method`. A probe's result is shown under it on `/healthz`. */
  id?: string;
}

/** Options of `@on.startup`. */
export interface StartupOptions extends ActivityOptions {
  /** At most this many attempts; then the operator does not start. Default: no limit (the operator waits). */
  retries?: number;
  /** Seconds before retrying after an error (other than TemporaryError, which says its own delay). Default: 1 s doubling per attempt, up to 60 s. */
  backoff?: number;
  /** Seconds since the first attempt after which the handler fails for good (its attempt's `signal` aborts). Default: none. */
  timeout?: number;
}

/** Options of `@on.cleanup`. */
export interface CleanupOptions extends ActivityOptions {
  /** Seconds this handler may take (within what is left of the stop deadline, which always bounds it). */
  timeout?: number;
}

/** Options of `@on.probe`. */
export interface ProbeOptions extends ActivityOptions {
  /** Seconds a run may take before it counts as failed ("timed out"). Default 5. */
  timeout?: number;
}

/** The activities: when the handler runs. */
export type ActivityKind = 'startup' | 'cleanup' | 'probe';

/** A registered activity handler. @internal */
export interface ActivitySpec {
  kind: ActivityKind;
  id: string;
  options: StartupOptions | CleanupOptions | ProbeOptions;
  fn: ActivityFn;
}

/** An activity handler as a decorator records it on a class, before the class is instantiated. */
export interface ActivityDeclaration {
  kind: ActivityKind;
  options: StartupOptions | CleanupOptions | ProbeOptions;
  method: string | symbol;
}
