import type { ObjectApi } from '../api/object-api.js';
import type { Clock } from '../clock/clock.js';
import { ObjectMemos } from '../intents/memo.js';
import { parseFieldPath, type FieldPath } from '../objects/field-path.js';
import { noMetrics } from '../observability/metrics.js';
import type { ExecutionEnvironment } from './execution.js';
import type { ChangeHandlerSpec } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { EventPoster } from '../posting/events.js';
import type { Identity } from '../state/identity.js';
import type { Storage } from '../state/storage.js';
import type { ObjectEvent } from '../watching/watch-events.js';
import type { Holds } from './finalizer-step.js';
import type { HandlerRunResult, Selected } from './handler-run.js';
import type { ObjectMemory, OwnWrite } from './object-memory.js';
import type { Change } from './progression.js';

/** What one processing run needs; the reactor provides it. */
export interface ChangeBatch {
  uid: string;
  latest: ObjectEvent<KubeObject>;
  events: readonly ObjectEvent<KubeObject>[];
  signal: AbortSignal;
}

export interface ChangeProcessorOptions {
  api: ObjectApi;
  handlers: readonly ChangeHandlerSpec[];
  logger: Logger;
  poster: EventPoster;
  metrics?: Metrics;
  /** The clock for handler attempt limits and progress times. Default {@link systemClock}. */
  clock?: Clock;
  /** The time progress records read, when it should differ from `clock` (kept for older callers). Default: `clock.now`. */
  now?: () => number;
  /**
   * The longest one attempt of a handler may run (the operator's default handler timeout): past it,
   * the attempt's signal aborts and it counts as a failure that is retried with backoff, so a hung
   * handler cannot hold its worker slot forever. Unset: no limit beyond the handler's own `timeout`.
   */
  attemptTimeoutMs?: number;
  /**
   * Other work that holds objects with the framework finalizer (timers, daemons): `applies` says it
   * wants an object; `release` stops it for an object being deleted, before the finalizer comes off.
   */
  holds?: Holds;
  /** Whose bookkeeping this processor keeps (annotation prefix, finalizer, what its essence leaves out). Default `konductor.dev`. */
  identity?: Identity;
  /**
   * Where the diff-base and progress are written: `annotations` (default) or `status`
   * (`status["<identity>"]`, in the status write the handlers make anyway). Both places are read.
   * A resource without a status subresource always uses annotations.
   */
  storage?: Storage;
  /** memo: the operator's per-object memos (`ctx.memo`, and what `when` filters see). Default: this processor's own. */
  memos?: ObjectMemos;
}

/** One processing run of one object: its memory, whether it is resuming, and the operator's stop signal. */
export interface ObjectRun {
  memory: ObjectMemory;
  resuming: boolean;
  signal: AbortSignal;
  /** Our last write before this run, even when the watch has caught up with it. */
  lastWrite?: OwnWrite;
}

/** One run's result, ready to write. */
export interface RunToWrite {
  body: KubeObject;
  change: Change;
  selected: readonly Selected[];
  run: HandlerRunResult;
  done: boolean;
  blocked: boolean;
  /** Aborted once this replica stopped handling objects: a write meeting a newer version is then moot. */
  signal: AbortSignal;
}

/** Fields watched outside the essence (such as `status.phase`): added to it, so their changes count. */
export function extraFieldsOf(handlers: readonly ChangeHandlerSpec[]): FieldPath[] {
  return handlers
    .map((h) => h.options.field)
    .filter(
      (field): field is string =>
        field !== undefined && !field.startsWith('spec.') && field !== 'spec',
    )
    .map((field) => parseFieldPath(field));
}

/** What every handler invocation of the processor shares. */
export function executionOf(
  options: ChangeProcessorOptions,
  identity: Identity,
  now: () => number,
  clock: Clock,
): ExecutionEnvironment {
  return {
    resource: options.api.resource,
    client: options.api.client,
    poster: options.poster,
    metrics: options.metrics ?? noMetrics,
    now,
    clock,
    attemptTimeoutMs: options.attemptTimeoutMs,
    identity,
    memos: options.memos ?? new ObjectMemos(),
  };
}
