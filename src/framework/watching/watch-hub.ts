import { concat, defer, EMPTY, from, Observable, of, share, finalize, switchMap } from 'rxjs';
import type { ApiClient } from '../api/api-client.js';
import { resourceId, type Resource, type ResourceSelector } from '../api/resource.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { WatchEvent } from './watch-events.js';
import { ObjectStore } from './object-store.js';
import { resolveResource } from './resource-resolver.js';
import type { ScopedStore } from './store-reader.js';
import type { WatchHealth } from './watch-health.js';
import { watchResource, type WatchStreamOptions } from './watch-stream.js';

/** Which objects of a resource a watch covers; part of what makes two watches the same. */
export interface WatchScope {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** The first listing from the API server's cache ({@link WatchStreamOptions.firstListFromCache}); not part of the scope's identity. */
  firstListFromCache?: boolean;
}

/** The identity of a hub's watch of `resource` in `scope`: watches with equal keys are one watch. */
export function watchKey(resource: Resource, scope: WatchScope = {}): string {
  const { namespace = '', labelSelector = '', fieldSelector = '' } = scope;
  return JSON.stringify([resourceId(resource), namespace, labelSelector, fieldSelector]);
}

/** Tunables passed to every underlying {@link watchResource}. */
export type WatchTuning = Pick<
  WatchStreamOptions,
  'pageSize' | 'timeoutSeconds' | 'idleTimeoutMs' | 'backoff' | 'keepManagedFields' | 'memoryBudget'
>;

interface SharedWatch {
  store: ObjectStore;
  synced: boolean;
  live: Observable<WatchEvent>;
  // Read cache: which resource and namespace the store holds.
  id: string;
  namespace: string | undefined;
}

/**
 * One list+watch per resource and scope, however many subscribers: a late subscriber first gets
 * the objects already known (as ADDED, plus SYNCED if the listing is done), then live events.
 * The underlying watch stops when the last subscriber leaves.
 */
export class WatchHub {
  private readonly watches = new Map<string, SharedWatch>();
  private readonly logger: Logger;
  private readonly metrics: Metrics;

  constructor(
    private readonly client: ApiClient,
    private readonly options: {
      logger?: Logger;
      metrics?: Metrics;
      tuning?: WatchTuning;
      health?: WatchHealth;
    } = {},
  ) {
    this.logger = options.logger ?? silentLogger();
    this.metrics = options.metrics ?? noMetrics;
  }

  /** Resolves a resource by name (waiting for its CRD if needed), then watches it. */
  watchSelector<T extends KubeObject = KubeObject>(
    selector: ResourceSelector,
    scope: WatchScope = {},
  ): Observable<WatchEvent<T>> {
    return resolveResource(this.client, selector, { logger: this.logger }).pipe(
      switchMap((resource) => this.watch<T>(resource, scope)),
    );
  }

  /** Watches a resolved resource in a scope, sharing the underlying watch. */
  watch<T extends KubeObject = KubeObject>(
    resource: Resource,
    scope: WatchScope = {},
  ): Observable<WatchEvent<T>> {
    const key = watchKey(resource, scope);
    return defer(() => {
      const shared = this.watches.get(key) ?? this.open(key, resource, scope);
      const known: WatchEvent[] = [...shared.store.values()].map((object) => ({
        type: 'ADDED',
        object,
        fromList: true,
      }));
      return concat(
        from(known),
        shared.synced ? of<WatchEvent>({ type: 'SYNCED' }) : EMPTY,
        shared.live,
      );
    }) as Observable<WatchEvent<T>>;
  }

  /** Number of underlying watches currently open. */
  get openWatches(): number {
    return this.watches.size;
  }

  private open(key: string, resource: Resource, scope: WatchScope): SharedWatch {
    const store = new ObjectStore();
    const entry: SharedWatch = {
      store,
      synced: false,
      live: EMPTY,
      id: resourceId(resource),
      namespace: scope.namespace,
    };
    const source = watchResource(this.client, resource, {
      ...this.options.tuning,
      ...scope,
      store,
      health: this.options.health,
      logger: this.logger,
      metrics: this.metrics,
    });
    entry.live = new Observable<WatchEvent>((subscriber) =>
      source.subscribe({
        next: (event) => {
          if (event.type === 'SYNCED') entry.synced = true;
          subscriber.next(event);
        },
        error: (error: unknown) => subscriber.error(error),
      }),
    ).pipe(
      finalize(() => this.watches.delete(key)),
      share({ resetOnRefCountZero: true, resetOnError: true }),
    );
    this.watches.set(key, entry);
    return entry;
  }

  /**
   * The objects a watch open in this scope knows, by uid (read-only; no API call); undefined when no
   * such watch is open. The map is the watch's own and follows it.
   */
  stored(
    resource: Resource,
    scope: WatchScope = {},
  ): (ReadonlyMap<string, KubeObject> & Pick<ObjectStore, 'named'>) | undefined {
    return this.watches.get(watchKey(resource, scope))?.store;
  }

  /** Read cache: the stores of the open watches of a resource, each with the namespace it covers. */
  stores(resource: Pick<Resource, 'group' | 'version' | 'plural'>): ScopedStore[] {
    const id = resourceId(resource);
    return [...this.watches.values()]
      .filter((watch) => watch.id === id)
      .map(({ namespace, store }) => ({ namespace, store }));
  }
}
