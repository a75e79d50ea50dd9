import type { ResourceSelector } from '../api/resource.js';
import { toMilliseconds, type DurationInput } from '../clock/duration.js';
import { isKind, type Kind } from '../objects/kind.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Cache } from './cache-contract.js';
import type { Conditions } from './conditions.js';
import type {
  HandlerOptions,
  ObjectContext,
  SpecOf,
  StatusOf,
  TypedObject,
} from './handler-specs.js';
import type { Patch } from './patch.js';

/** A resource named as a kind or as `[apiVersion, name]`. */
export type KindReference<T = KubeObject> = Kind<T> | readonly [apiVersion: string, name: string];

/** An object to reconcile, by name: in the watched object's namespace unless `namespace` is given. */
export interface ObjectKey {
  /** Default: the watched object's namespace. */
  namespace?: string;
  /** The object's name. */
  name: string;
}

/** What a map function returns: the keys of the objects to reconcile (none: `undefined` or `[]`). */
export type MappedKeys = ObjectKey | readonly ObjectKey[] | undefined | null;

/**
 * Another resource whose changes wake some objects of the reconciled resource: controller-runtime's
 * `Watches(other, EnqueueRequestsFromMapFunc(map))`. Build it with {@link watch} so `map` is typed.
 */
export interface WatchRelation<Other = KubeObject> {
  /** The other resource. */
  kind: KindReference<Other>;
  /** The objects to reconcile when `object` changes (also when it is deleted: its last state). */
  map: (object: Other, context: { cache: Cache }) => MappedKeys;
  /** Sent with the watch, so other objects never reach the operator. */
  labelSelector?: string;
}

/**
 * A typed {@link WatchRelation}: `watch(kinds.Namespace, (ns) => ...)`.
 * @example
 * ```ts
 * @on.reconcile(Prometheus, { watches: [watch(ServiceMonitor, (monitor, { cache }) => selecting(cache, monitor))] })
 * ```
 */
export function watch<Other>(
  kind: KindReference<Other>,
  map: (object: Other, context: { cache: Cache }) => MappedKeys,
  options: { labelSelector?: string } = {},
): WatchRelation<Other> {
  return { kind, map, labelSelector: options.labelSelector };
}

/** A {@link WatchRelation} of any watched type, as `watches` lists them. */
export interface AnyWatchRelation {
  /** The other resource. */
  kind: KindReference<unknown>;
  /** The objects to reconcile when one of the other resource's objects changes. */
  map: (object: never, context: { cache: Cache }) => MappedKeys;
  /** Sent with the watch. */
  labelSelector?: string;
}

/** Options of `@on.reconcile`. `labels`, `annotations`, `when` and the selectors filter the reconciled objects. */
export interface ReconcileOptions<T extends TypedObject = KubeObject> extends HandlerOptions<T> {
  /**
   * Children whose controller owner reference names an object wake it (controller-runtime's `Owns`):
   * a kind, or `{ kind, labelSelector }` so that only labelled children are watched.
   */
  owns?: readonly (
    | KindReference<unknown>
    | {
        /** The child resource. */
        kind: KindReference<unknown>;
        /** Only children with matching labels are watched. */
        labelSelector?: string;
      }
  )[];
  /** Other resources whose changes wake the objects their map function names. */
  watches?: readonly AnyWatchRelation[];
  /** Run again this long after every successful run (unless the handler returns its own delay). Default: only on change. */
  requeueAfter?: DurationInput;
  /**
   * Hold objects with the framework finalizer, so a deleted object gets one last run with
   * `ctx.deleting` before it goes. Default `true`; `false`: no last run.
   */
  finalizer?: boolean;
  /** Runs of one object start at least this far apart; changes in between make one run. Default 0.2 s. */
  minInterval?: DurationInput;
  /** Write `status.observedGeneration` after each successful run (resources with a status subresource). Default `true`. */
  observedGeneration?: boolean;
}

/**
 * What an `@on.reconcile` handler receives: the object's current state, a `patch` of it (sent when
 * the handler returns, with `conditions` and `status.observedGeneration`, in one merge PATCH per
 * part), and whether it is being deleted.
 */
export interface ReconcileContext<T = Record<string, unknown>> extends ObjectContext<
  T,
  StatusOf<T>
> {
  /** Changes to the object sent when the handler returns; `null` deletes a field. Not sent if it throws. */
  patch: Patch<SpecOf<T>, StatusOf<T>>;
  /** `status.conditions`, set by name (see {@link Conditions}). */
  conditions: Conditions;
  /** True in the one last run of an object being deleted (the finalizer comes off when it returns). */
  deleting: boolean;
  /** Failed runs in a row before this one. */
  retry: number;
  /** Aborted on the operator's handler timeout or when the operator stops. */
  signal: AbortSignal;
}

/**
 * What a reconcile handler returns: nothing, how long until it runs again (seconds, ISO-8601, luxon
 * Duration), or that with a priority: `high` runs it before changes seen live (say, a failover that
 * must not wait behind a catch-up), `low` lets it wait with the listing's backlog.
 */
export type ReconcileResult =
  | void
  | undefined
  | DurationInput
  | {
      /** How long until the object runs again. */
      requeueAfter?: DurationInput;
      /** Default `normal`. */
      priority?: 'high' | 'normal' | 'low';
    };

/** An `@on.reconcile` handler function. */
export type ReconcileHandlerFn<T = Record<string, unknown>> = (
  context: ReconcileContext<T>,
) => ReconcileResult | Promise<ReconcileResult>;

/** A registered `@on.reconcile` handler with its durations checked. */
export interface ReconcileSpec {
  /** Always `reconcile`. */
  kind: 'reconcile';
  /** Unique per resource. */
  id: string;
  /** The reconciled resource. */
  resource: ResourceSelector;
  /** As `@on.reconcile` takes them. */
  options: ReconcileOptions;
  /** `options.owns`, resolved. */
  owns: readonly {
    /** The child resource. */
    resource: ResourceSelector;
    /** Only children with matching labels are watched. */
    labelSelector?: string;
  }[];
  /** `options.watches`, resolved. */
  watches: readonly {
    /** The other resource. */
    resource: ResourceSelector;
    /** The objects to reconcile when one of its objects changes. */
    map: WatchRelation['map'];
    /** Sent with the watch. */
    labelSelector?: string;
  }[];
  /** `options.requeueAfter` in milliseconds. */
  requeueAfterMs?: number;
  /** `options.minInterval` in milliseconds. */
  minIntervalMs: number;
  /** The handler. */
  fn: ReconcileHandlerFn;
}

/** The default `minInterval`: 100 changes to one object in a second make at most 6 runs. */
export const DEFAULT_MIN_INTERVAL_MS = 200;

function selectorOf(reference: KindReference<unknown>, what: string): ResourceSelector {
  if (isKind(reference)) return { apiVersion: reference.apiVersion, name: reference.plural };
  if (
    Array.isArray(reference) &&
    typeof reference[0] === 'string' &&
    typeof reference[1] === 'string'
  )
    return { apiVersion: reference[0], name: reference[1] };
  throw new Error(`${what} must be a kind or [apiVersion, name], e.g. kinds.Pod or ['v1', 'pods']`);
}

/** The spec of a declared `@on.reconcile`; throws naming the handler when an option is malformed. */
export function reconcileSpec(
  id: string,
  resource: ResourceSelector,
  options: ReconcileOptions,
  fn: ReconcileHandlerFn,
): ReconcileSpec {
  const where = `@on.reconcile ${id}`;
  const owns = (options.owns ?? []).map((entry, index) => {
    const what = `${where}: owns[${index}]`;
    if (isKind(entry) || Array.isArray(entry))
      return { resource: selectorOf(entry as KindReference<unknown>, what) };
    const { kind, labelSelector } = (entry ?? {}) as {
      kind?: KindReference<unknown>;
      labelSelector?: string;
    };
    return {
      resource: selectorOf(kind as KindReference<unknown>, what),
      labelSelector: labelSelector || undefined,
    };
  });
  const watches = (options.watches ?? []).map((relation, index) => {
    if (typeof relation?.map !== 'function')
      throw new Error(`${where}: watches[${index}] needs a map function (use watch(kind, map))`);
    return {
      resource: selectorOf(relation.kind, `${where}: watches[${index}].kind`),
      map: relation.map as WatchRelation['map'],
      labelSelector: relation.labelSelector || undefined,
    };
  });
  const requeueAfterMs =
    options.requeueAfter === undefined
      ? undefined
      : toMilliseconds(options.requeueAfter, `${where} requeueAfter`);
  const minIntervalMs =
    options.minInterval === undefined
      ? DEFAULT_MIN_INTERVAL_MS
      : toMilliseconds(options.minInterval, `${where} minInterval`);
  return {
    kind: 'reconcile',
    id,
    resource,
    options,
    owns,
    watches,
    requeueAfterMs,
    minIntervalMs,
    fn,
  };
}
