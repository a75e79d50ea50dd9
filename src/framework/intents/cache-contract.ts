import type { Kind } from '../objects/kind.js';
import type { Resource, ResourceSelector } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { HandlerOptions, SpecOf, StatusOf, TypedObject } from './handler-specs.js';
import type { ObjectState } from './object-parts.js';

/**
 * One resource as the operator's watches hold it. Reads make no API call: they answer from the
 * objects the watches already keep, as current as the last watch event.
 *
 * The objects returned are the watch store's own objects, not copies (a copy per read would cost
 * 100,000 copies per list of a large resource), and they are not frozen (freezing would walk every
 * object on every event, and they are the same objects handlers get as `body`). They are read-only
 * by contract: change a copy (`structuredClone(object)`), never the object itself, or the watch's
 * view of the cluster is wrong from then on.
 */
export interface CachedResource<T extends TypedObject = KubeObject> {
  /** The object named `name` in `namespace` (omit it for cluster-scoped resources), or undefined. */
  get(key: { namespace?: string; name: string }): T | undefined;
  /**
   * The objects in `namespace` (every namespace the operator serves when omitted) matching
   * `labelSelector` (`app=db,tier!=cache,env in (a,b)`). Throws on a selector it cannot read.
   */
  list(query?: { namespace?: string; labelSelector?: string }): readonly T[];
}

/**
 * The operator's read cache: every resource it watches, for a handler or `@on.cache`. Only namespaces
 * the operator serves are visible: a read elsewhere finds nothing.
 *
 * @example
 * ```ts
 * @on.cache('v1', 'configmaps')
 * class Widgets {
 *   @on.create('example.com/v1', 'widgets')
 *   async created({ cache, namespace, spec }: ChangeContext<Widget>) {
 *     const settings = cache.resource<ConfigMap>('v1', 'configmaps').get({ namespace, name: spec.configMap });
 *   }
 * }
 * ```
 */
export interface Cache {
  /** A reader of one watched resource. Throws, saying how to declare it, when the operator does not watch it. */
  resource<T extends TypedObject>(kind: Kind<T>): CachedResource<T>;
  /** The same, named by `apiVersion` and plural (or kind, singular or short name). */
  resource<T extends TypedObject = KubeObject>(
    apiVersion: string,
    resource: string,
  ): CachedResource<T>;
}

/** One index: the values objects contributed under each key (Kopf's `@kopf.index`, dict form). */
export interface Index<V = unknown> {
  /** Every value contributed under `key`, one per contributing object; empty when none. */
  get(key: string): readonly V[];
  /** Whether some object contributed a value under `key`. */
  has(key: string): boolean;
  /** The keys that have at least one value. */
  keys(): IterableIterator<string>;
  /** The number of keys. */
  readonly size: number;
}

/** The operator's indexes by id (`Class.method` unless given). */
export interface Indexes {
  /** The index with this id; throws naming the known ids when there is none. */
  get<V = unknown>(id: string): Index<V>;
}

/** What an `@on.index` function receives: one object. It must be synchronous and quick. */
export interface IndexContext<T extends TypedObject = KubeObject> extends ObjectState<
  T,
  SpecOf<T>,
  StatusOf<T>
> {
  /** A logger bound to this object and index. */
  logger: Logger;
  /** The resolved resource. */
  resource: Resource;
}

/** An `@on.index` function: the object's values by key, or undefined for none. */
export type IndexFn<T extends TypedObject = KubeObject, V = unknown> = (
  context: IndexContext<T>,
) => Record<string, V> | undefined;

/** Options of `@on.index`: which objects contribute. */
export type IndexOptions<T extends TypedObject = KubeObject> = Pick<
  HandlerOptions<T>,
  'id' | 'labels' | 'annotations' | 'when' | 'labelSelector'
>;

/** A registered index. */
export interface IndexSpec {
  /** Always `index`. */
  kind: 'index';
  /** Unique per operator: `ctx.indexes.get(id)` finds the index by it. */
  id: string;
  /** The watched resource whose objects contribute. */
  resource: ResourceSelector;
  /** Which objects contribute. */
  options: IndexOptions;
  /** The function that gives an object's values by key. */
  fn: IndexFn;
}

/** Options of `@on.cache`: which objects the cache-only watch takes (both sent to the API server). */
export interface CacheOptions {
  /** A label selector: `app=db,tier!=cache`. */
  labelSelector?: string;
  /** A field selector: `metadata.name=web`. */
  fieldSelector?: string;
}

/** A resource watched for the cache alone (`@on.cache`). */
export interface CacheSpec {
  /** The resource to watch. */
  resource: ResourceSelector;
  /** Which of its objects to take. */
  options: CacheOptions;
}
