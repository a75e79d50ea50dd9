import type { ApiClient } from '../api/api-client.js';
import type { Resource, ResourceSelector } from '../api/resource.js';
import type { DurationInput } from '../clock/duration.js';
import type { MetaFilter, ValueFilter } from './filters.js';
import type { FilterContext } from './filter-context.js';
import type { Memo } from './memo.js';
import type { Patch } from './patch.js';
import type { Logger } from '../observability/logger.js';
import type { ObjectEvents } from '../posting/events.js';
import type { Diff } from '../state/diff.js';
import type { ChangeReason } from '../state/progress.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { OwnedOptions, OwnedSpec } from './owned-specs.js';
import type { Cache, Indexes } from './cache-contract.js';
import type { ObjectState } from './object-parts.js';
import type { ReconcileOptions, ReconcileSpec } from './reconcile-specs.js';
import type { Conditions } from './conditions.js';
import type { TypedObject, SpecOf, StatusOf, ObjectOf, ChangeValue } from './object-types.js';

export type {
  TypedObject,
  IsObjectType,
  SpecOf,
  StatusOf,
  ObjectOf,
  EssenceOf,
  FieldValue,
  ChangeValue,
} from './object-types.js';

/** What an `@on.event` handler receives: one raw watch event. */
export interface EventContext<T extends TypedObject = KubeObject> {
  /** The watch event type. */
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The object as the event carried it. */
  body: T;
  /** `metadata.name`, or `''`. */
  name: string;
  /** `metadata.namespace`; undefined for a cluster-scoped object. */
  namespace: string | undefined;
  /** `metadata.uid`, or `''`. */
  uid: string;
  /** A logger bound to this object and handler. */
  logger: Logger;
  /** Aborted when the operator stops. */
  signal: AbortSignal;
  /** The operator's API client. */
  client: ApiClient;
  // Read cache and indexes.
  /** The operator's read cache: watched objects, no API call. */
  cache: Cache;
  /** The operator's indexes (`@on.index`), by id. */
  indexes: Indexes;
  // memo: the object's parts, resource and memo, as every per-object context has them (Kopf's kwargs)
  /** `body.spec`, or `{}` when the object has none. */
  spec: SpecOf<T>;
  /** `body.status`, if any. */
  status: StatusOf<T> | undefined;
  /** `body.metadata`. */
  metadata: NonNullable<KubeObject['metadata']>;
  /** `metadata.labels`, or `{}`. */
  labels: Record<string, string>;
  /** `metadata.annotations`, or `{}`. */
  annotations: Record<string, string>;
  /** The resolved resource. */
  resource: Resource;
  /** The object's memory, shared with its other handlers for the life of the process (see {@link Memo}). */
  memo: Memo;
}

/**
 * Options of `@on.event`. With `field`, the handler runs only for events whose object has a matching
 * value there (`value`: exact, `PRESENT`, `ABSENT`, or a predicate; `field` alone means `PRESENT`), as Kopf's.
 */
export interface EventHandlerOptions<T extends TypedObject = KubeObject> extends HandlerOptions<T> {
  /** A dotted path (`status.name`) the object must have (with `value`: a matching value at). */
  field?: string;
  /** With `field`: the value that must be there; default `PRESENT`. */
  value?: ValueFilter;
}

/** An `@on.event` handler function. */
export type EventHandlerFn<T extends TypedObject = KubeObject> = (
  context: EventContext<T>,
) => unknown;

/** Options shared by all handlers. */
export interface HandlerOptions<T extends TypedObject = KubeObject> {
  /** Stable id; defaults to the method's name (plus `/field` for field handlers), as Kopf's. Progress and results are keyed by it. */
  id?: string;
  /** Only objects with these labels: exact value, `PRESENT`, `ABSENT`, or a predicate. Checked in the operator. */
  labels?: Record<string, MetaFilter>;
  /** Only objects with these annotations: exact value, `PRESENT`, `ABSENT`, or a predicate. */
  annotations?: Record<string, MetaFilter>;
  /**
   * Only objects for which this returns true. It receives a {@link FilterContext}: `body`, `spec`,
   * `status`, `metadata`, `labels`, ... and the object's `memo` (`when: ({ spec }) => spec.size > 1`).
   */
  when?: (context: FilterContext<T>) => boolean;
  /** Sent to the API server, so non-matching objects never reach the operator (e.g. `app=db,tier!=cache`). */
  labelSelector?: string;
  /** Sent to the API server (e.g. `metadata.name=main`). */
  fieldSelector?: string;
}

/** A registered `@on.event` handler. */
export interface EventHandlerSpec {
  /** Always `event`. */
  kind: 'event';
  /** Unique per resource. */
  id: string;
  /** The watched resource. */
  resource: ResourceSelector;
  /** As `@on.event` takes them. */
  options: EventHandlerOptions;
  /** The handler. */
  fn: EventHandlerFn;
}

/** How a handler's errors other than TemporaryError/PermanentError are treated. */
export type ErrorsMode = 'temporary' | 'permanent' | 'ignored';

/** Options of change handlers (`on.create`, `on.update`, `on.field`, `on.deletion`, `on.resume`). */
export interface ChangeHandlerOptions<
  T extends TypedObject = KubeObject,
> extends HandlerOptions<T> {
  /** A dotted path (`spec.size`): for update handlers, run only when it changed; `old`/`new`/`diff` narrow to it. */
  field?: string;
  /** With `field`: the field's value must match (for updates: its old or new value). */
  value?: ValueFilter;
  /** Update handlers: the old value (of `field`, or the essence) must match. */
  old?: ValueFilter;
  /** Update handlers: the new value must match. */
  new?: ValueFilter;
  /** At most this many attempts, then the failure is permanent. */
  retries?: number;
  /** Seconds before retrying after an error other than TemporaryError. Default: 1 s doubling per attempt, up to 60 s. */
  backoff?: number;
  /** Seconds since the first attempt after which the handler fails permanently. */
  timeout?: number;
  /** Errors other than TemporaryError/PermanentError: retried (`temporary`, default), final (`permanent`), or counted as success (`ignored`). */
  errors?: ErrorsMode;
  /** Delete handlers: do not hold the object with a finalizer (best effort, runs once when the object is gone). */
  optional?: boolean;
  /** Resume handlers: also run for objects being deleted when the operator starts. */
  deleted?: boolean;
}

/**
 * Fields every per-object context has: one state of the object, a logger bound to it, its resource.
 * The first type argument is either the whole object type (e.g. `Widget` from `konductor types`),
 * or its spec type with `Status` as the second: `ObjectContext<Widget>` or `ObjectContext<WidgetSpec, WidgetStatus>`.
 */
export interface ObjectContext<
  Spec = Record<string, unknown>,
  Status = Record<string, unknown>,
> extends ObjectState<ObjectOf<Spec, Status>, SpecOf<Spec>, StatusOf<Spec, Status>> {
  /** A logger bound to this object and handler (`namespace`, `name`, `handler`). */
  logger: Logger;
  /** The resolved resource. */
  resource: Resource;
  /** The operator's API client, for the objects a handler manages (same credentials and connections). */
  client: ApiClient;
  /** Kubernetes Events about this object (`info`, `warn`, `error`) or another (`post`), posted by this operator without waiting. */
  events: ObjectEvents;
  // Read cache and indexes.
  /** The operator's read cache: every watched resource, read without an API call (`cache.resource('v1', 'configmaps').get(...)`). */
  cache: Cache;
  /** The operator's indexes (`@on.index`), by id: `indexes.get<V>('Class.method').get(key)`. */
  indexes: Indexes;
  // memo
  /** The object's memory, shared by all its handlers for the life of the process, made on first use (see {@link Memo}). */
  memo: Memo;
}

/**
 * What a change handler receives. The type arguments type `spec`, `status`, `body`, `patch` and
 * `old`/`new`: `ChangeContext<Widget>` for a whole object type (then `old`/`new` are its essence; use
 * {@link FieldChangeContext} for field handlers), or `ChangeContext<WidgetSpec, WidgetStatus>`
 * (then `old`/`new` are `unknown` unless `Change` says otherwise).
 */
export interface ChangeContext<
  Spec = Record<string, unknown>,
  Status = Record<string, unknown>,
  Change = ChangeValue<Spec>,
> extends ObjectContext<Spec, Status> {
  /** Changes to send when the handler returns (one merge PATCH, status on its subresource); `null` deletes a field. */
  patch: Patch<SpecOf<Spec>, StatusOf<Spec, Status>>;
  /** `status.conditions`, set by name; written with `patch`, with `status.observedGeneration` (see {@link Conditions}). */
  conditions: Conditions;
  /** Why the handler runs. */
  reason: ChangeReason;
  /** Update handlers: the previous value (of `field`, or the whole essence); undefined for other causes. */
  old: Change | undefined;
  /** Update handlers: the current value (of `field`, or the whole essence); undefined for other causes. */
  new: Change | undefined;
  /** Update handlers: what changed (narrowed to `field`). */
  diff: Diff;
  /** Attempts before this one (0 on the first). */
  retry: number;
  /** When the first attempt started. */
  started: Date;
  /** Milliseconds since the first attempt started. */
  runtime: number;
  /** Aborted on timeout or when the operator stops. */
  signal: AbortSignal;
}

/** What a field handler (`on.field(..., 'spec.size')`) on objects of type `T` receives: `old`/`new` are that field's values. */
export type FieldChangeContext<T, Field extends string> = ChangeContext<
  T,
  StatusOf<T>,
  ChangeValue<T, Field>
>;

/**
 * A change handler function. What it returns, other than `undefined` or `null`, is stored in the
 * object's status under the handler's id (Kopf's results delivery), in the same write as the status
 * its `patch` sets: `return { pvc: name }` from a method `created` gives `status.created.pvc`.
 * It must be JSON (a function, symbol, BigInt or cycle fails the handler permanently); other handlers
 * read it as `status['<id>']`, also after a restart. `@on.event` handlers, timers and daemons keep
 * what they return to themselves.
 */
export type ChangeHandlerFn<Spec = Record<string, unknown>, Status = Record<string, unknown>> = (
  context: ChangeContext<Spec, Status>,
) => unknown;

/** A registered change handler: its kind is the reason it runs for. */
export interface ChangeHandlerSpec {
  /** `create`, `update`, `delete` or `resume`. */
  kind: ChangeReason;
  /** Unique per resource; progress and results are stored under it. */
  id: string;
  /** Ids its progress may be stored under by an earlier release (`Class.method`), read when its own has none. */
  legacyIds?: readonly string[];
  /** The watched resource. */
  resource: ResourceSelector;
  /** As the `@on.*` change decorators take them. */
  options: ChangeHandlerOptions;
  /** The handler. */
  fn: ChangeHandlerFn;
}

/** Options of `@timer`. Durations are ISO-8601 strings (`PT1H`), luxon Durations or seconds. */
export interface TimerOptions<T extends TypedObject = KubeObject> extends HandlerOptions<T> {
  /** Time between runs; may be computed from the object (e.g. a backup policy field). */
  interval?: DurationInput | ((object: T) => DurationInput);
  /** Wait before the first run after the object is first seen by this process. */
  initialDelay?: DurationInput;
  /** Run only once the object has not changed for this long. */
  idle?: DurationInput;
  /** Run on a fixed grid instead of `interval` after the previous run ended. */
  sharp?: boolean;
  /**
   * Timers whose interval is at least this keep their schedule in an annotation on the object, so a
   * restarted operator waits for the remaining interval. Shorter ones keep it in memory. Default 60 s.
   */
  persistThreshold?: DurationInput;
  /**
   * Whether this timer holds its objects with the framework finalizer (default `true`, as in Kopf), so
   * that deleting an object waits for a run in progress to end. Set `false` for work that needs no
   * graceful stop (a status refresh, a probe, a metric): an object whose only finalizer reason is such
   * timers or daemons gets none, so it is deleted at once, also while the operator is down, and a run
   * in progress when it is deleted just sees its `signal` abort.
   */
  finalizer?: boolean;
}

/** What a timer receives. */
export interface TimerContext<
  Spec = Record<string, unknown>,
  Status = Record<string, unknown>,
> extends ObjectContext<Spec, Status> {
  /** Changes to send when the run returns; `null` deletes a field. */
  patch: Patch<SpecOf<Spec>, StatusOf<Spec, Status>>;
  /** Consecutive failed runs before this one. */
  retry: number;
  /** Aborted when the timer stops (object deleted or no longer matching, operator stopping). */
  signal: AbortSignal;
}

/** A `@timer` handler function; a JSON value it returns is stored at `status[<id>]`. */
export type TimerHandlerFn<Spec = Record<string, unknown>, Status = Record<string, unknown>> = (
  context: TimerContext<Spec, Status>,
) => unknown;

/** A registered timer. */
export interface TimerSpec {
  /** Always `timer`. */
  kind: 'timer';
  /** Unique per resource; the schedule is stored under it. */
  id: string;
  /** Ids its schedule may be stored under by an earlier release (`Class.method`), read when its own has none. */
  legacyIds?: readonly string[];
  /** The watched resource. */
  resource: ResourceSelector;
  /** As `@timer` takes them. */
  options: TimerOptions;
  /** The handler. */
  fn: TimerHandlerFn;
}

/** Options of `@daemon`. */
export interface DaemonOptions<T extends TypedObject = KubeObject> extends HandlerOptions<T> {
  /** Wait before starting, once per object per process. */
  initialDelay?: DurationInput;
  /** After a stop request (`stopped` resolves), wait this long before aborting `signal`. Default 0. */
  cancellationBackoff?: DurationInput;
  /** How long a stopping daemon may take to exit before it is abandoned (and the finalizer released). Default 60 s. */
  cancellationTimeout?: DurationInput;
  /** Seconds before restarting a daemon that threw (other than TemporaryError). Default: 1 s doubling to 60 s. */
  backoff?: number;
  /**
   * Whether this daemon holds its objects with the framework finalizer (default `true`, as in Kopf), so
   * that deleting an object waits (up to `cancellationTimeout`) for the daemon to exit. Set `false` for
   * work that needs no graceful stop (a watch on something external, a cache, a probe): an object whose
   * only finalizer reason is such timers or daemons gets none, so it is deleted at once, also while the
   * operator is down, and the daemon is stopped once the deletion is seen.
   */
  finalizer?: boolean;
}

/**
 * What a daemon receives; `body` and friends always read the newest state of the object, including
 * the daemon's own writes to it through `client` (read-your-writes): after a status PATCH, `status`
 * shows it at once, not only when its watch event arrives.
 */
export interface DaemonContext<
  Spec = Record<string, unknown>,
  Status = Record<string, unknown>,
> extends ObjectContext<Spec, Status> {
  /** Aborted when the daemon must stop (after `cancellationBackoff`). */
  signal: AbortSignal;
  /** Resolves as soon as a stop is requested. */
  stopped: Promise<void>;
  /** Restarts so far after errors. */
  retry: number;
}

/** A `@daemon` handler function; it should return soon after `signal` aborts. */
export type DaemonHandlerFn<Spec = Record<string, unknown>, Status = Record<string, unknown>> = (
  context: DaemonContext<Spec, Status>,
) => unknown;

/** A registered daemon. */
export interface DaemonSpec {
  /** Always `daemon`. */
  kind: 'daemon';
  /** Unique per resource. */
  id: string;
  /** The watched resource. */
  resource: ResourceSelector;
  /** As `@daemon` takes them. */
  options: DaemonOptions;
  /** The handler. */
  fn: DaemonHandlerFn;
}

const CAUSES: ReadonlySet<string> = new Set(['create', 'update', 'delete', 'resume']);

/**
 * Whether two handlers with one id are one method under stacked decorators (`@on.create` over
 * `@on.resume`: one handler, two causes), which may share it, rather than a clash.
 */
export function stackedOnOneMethod(
  a: Pick<HandlerSpec, 'kind' | 'fn'>,
  b: Pick<HandlerSpec, 'kind' | 'fn'>,
): boolean {
  return a.fn === b.fn && a.kind !== b.kind && CAUSES.has(a.kind) && CAUSES.has(b.kind);
}

/** Every kind of handler the registry holds. */
export type HandlerSpec =
  EventHandlerSpec | ChangeHandlerSpec | TimerSpec | DaemonSpec | OwnedSpec | ReconcileSpec;

/** A handler as a decorator records it on a class, before the class is instantiated. */
export interface HandlerDeclaration {
  kind: HandlerSpec['kind'];
  resource: ResourceSelector;
  options:
    | HandlerOptions
    | ChangeHandlerOptions
    | TimerOptions
    | DaemonOptions
    | OwnedOptions
    | ReconcileOptions;
  method: string | symbol;
}
