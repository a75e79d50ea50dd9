import { resourceArguments, type Kind } from '../objects/kind.js';
import type { Subscription } from 'rxjs';
import type { ApiClient } from '../api/api-client.js';
import { apiVersionOf, resourceId, type Resource, type ResourceSelector } from '../api/resource.js';
import type {
  Cache,
  CachedResource,
  Index,
  Indexes,
  IndexSpec,
} from '../intents/cache-contract.js';
import type { CacheAccess } from '../intents/cache-scope.js';
import { IndexBook } from '../intents/index-book.js';
import { indexContribution } from '../intents/index-function.js';
import type { TypedObject } from '../intents/handler-specs.js';
import type { Logger } from '../observability/logger.js';
import type { Registry } from '../registry/registry.js';
import type { WatchEvent } from '../watching/watch-events.js';
import { resolveResource } from '../watching/resource-resolver.js';
import { listObjects, readObject, type NamespaceGate } from '../watching/store-reader.js';
import type { WatchHub, WatchScope } from '../watching/watch-hub.js';
import { inNamespaces, isNamespaceGlob, matchNamespace } from './namespace-patterns.js';

/** A resource as the cache looks it up: `apiVersion` plus a name as written, lower-cased. */
function nameKey(apiVersion: string, name: string): string {
  return `${apiVersion} ${name.toLowerCase()}`;
}

/**
 * The operator's read cache and indexes: readers over the watch hub's stores (no API call), the
 * watches `@on.cache` and `@on.index` declare, and the index bookkeeping fed by their events.
 * `start()` resolves once every one of those watches has its initial listing: the operator starts
 * its handlers only then (Kopf: handlers wait for indexes).
 */
export class OperatorCache implements CacheAccess {
  /** Resolved resources by every name the operator's handlers, caches and indexes use for them. */
  private readonly resolved = new Map<string, Resource>();
  private readonly books = new Map<string, IndexBook>();
  private readonly subscriptions: Subscription[] = [];
  private generation = 0;
  /** Settles a `start()` still waiting for listings, when stopped. */
  private stopped: () => void = () => undefined;
  private readonly patterns: readonly string[];
  private readonly gate: NamespaceGate;
  readonly cache: Cache;
  readonly indexes: Indexes;

  constructor(
    private readonly deps: {
      client: ApiClient;
      hub: WatchHub;
      registry: Registry;
      logger: Logger;
      namespaces: readonly string[] | undefined;
    },
  ) {
    this.patterns = [...new Set(deps.namespaces ?? [])];
    this.gate =
      this.patterns.length === 0
        ? () => true
        : (namespace) => this.patterns.some((pattern) => matchNamespace(pattern, namespace));
    this.cache = {
      resource: <T extends TypedObject>(first: string | Kind<T>, name?: string) => {
        const { resource } = resourceArguments(first, [name], 'cache.resource');
        return this.reader<T>(resource.apiVersion, resource.name);
      },
    } as Cache;
    this.indexes = { get: <V>(id: string) => this.book(id) as Index<V> };
  }

  /** Notes the names a resolved resource was declared by, so the cache finds its watches by any of them. */
  track(resource: Resource, selectors: readonly ResourceSelector[]): void {
    for (const selector of selectors)
      this.resolved.set(nameKey(selector.apiVersion, selector.name), resource);
    this.resolved.set(nameKey(apiVersionOf(resource), resource.plural), resource);
    this.resolved.set(nameKey(apiVersionOf(resource), resource.kind), resource);
  }

  /**
   * Opens the watches of `@on.cache` and `@on.index` (indexes emptied first); resolves `true` once
   * each has its initial listing, `false` if stopped before. A CRD not installed yet is waited for.
   */
  start(): Promise<boolean> {
    this.stop();
    const generation = this.generation;
    for (const book of this.books.values()) book.retain(() => false);
    const { caches, indexes } = this.deps.registry;
    const watches: Array<{
      resource: ResourceSelector;
      scope: WatchScope;
      index: IndexSpec | undefined;
    }> = [
      ...caches.map((spec) => ({ resource: spec.resource, scope: spec.options, index: undefined })),
      ...indexes.map((spec) => ({
        resource: spec.resource,
        scope: { labelSelector: spec.options.labelSelector },
        index: spec,
      })),
    ];
    if (watches.length === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const unsynced = new Set<string>(watches.map((_, i) => String(i)));
      const listed = (key: string): void => {
        unsynced.delete(key);
        if (unsynced.size === 0 && generation === this.generation) resolve(true);
      };
      this.stopped = () => resolve(false);
      watches.forEach(({ resource: selector, scope, index }, i) => {
        const resolution = resolveResource(this.deps.client, selector, {
          logger: this.deps.logger,
        }).subscribe((resource) => {
          this.track(resource, [selector]);
          const keys = this.namespacesOf(resource).map((namespace, n) => ({
            namespace,
            key: `${i}/${n}`,
          }));
          // Every namespace's key before any subscription: a shared watch already listed answers at once.
          keys.forEach(({ key }) => unsynced.add(key));
          listed(String(i));
          for (const { namespace, key } of keys) {
            const watchScope: WatchScope = {
              namespace,
              labelSelector: scope.labelSelector || undefined,
              fieldSelector: scope.fieldSelector || undefined,
            };
            this.subscriptions.push(this.subscribe(resource, watchScope, index, () => listed(key)));
          }
        });
        this.subscriptions.push(resolution);
      });
    });
  }

  /** Closes the cache's own watches (the handlers' watches close with their routes). */
  stop(): void {
    this.generation += 1;
    for (const subscription of this.subscriptions.splice(0)) subscription.unsubscribe();
    this.stopped();
    this.stopped = () => undefined;
  }

  /** As the operator watches: one watch per listed namespace, or one cluster-wide (all, a glob, or cluster-scoped). */
  private namespacesOf(resource: Resource): Array<string | undefined> {
    const patterns = resource.namespaced ? this.patterns : [];
    return patterns.length > 0 && !patterns.some(isNamespaceGlob) ? [...patterns] : [undefined];
  }

  private subscribe(
    resource: Resource,
    scope: WatchScope,
    index: IndexSpec | undefined,
    listed: () => void,
  ): Subscription {
    const globbed =
      resource.namespaced && scope.namespace === undefined && this.patterns.length > 0;
    const events = globbed
      ? this.deps.hub.watch(resource, scope).pipe(inNamespaces(this.patterns))
      : this.deps.hub.watch(resource, scope);
    const book = index ? this.book(index.id) : undefined;
    const failing = new Set<string>();
    const logger = this.deps.logger.child({ resource: resourceId(resource) });
    return events.subscribe({
      next: (event: WatchEvent) => {
        if (event.type === 'SYNCED') {
          // Belt and braces after a (re)listing: objects no store holds any more contribute nothing.
          const stores = this.deps.hub.stores(resource);
          book?.retain((uid) => stores.some(({ store }) => store.has(uid)));
          listed();
          return;
        }
        if (!index || !book) return;
        const uid = event.object.metadata?.uid ?? '';
        if (event.type === 'DELETED') {
          book.delete(uid);
          failing.delete(uid);
        } else {
          book.set(uid, indexContribution(index, event.object, resource, logger, failing));
        }
      },
      error: (error: unknown) =>
        logger.error(
          { err: error },
          `cache watch failed: ${error instanceof Error ? error.message : String(error)}`,
        ),
    });
  }

  private book(id: string): IndexBook {
    let book = this.books.get(id);
    if (!book) {
      const ids = this.deps.registry.indexes.map((spec) => spec.id);
      if (!ids.includes(id)) {
        throw new Error(
          `no index '${id}': ${ids.length > 0 ? `this operator's indexes are ${ids.map((i) => `'${i}'`).join(', ')}` : 'this operator has no indexes'}; declare one with @on.index(apiVersion, resource) on a method (its id is Class.method unless given)`,
        );
      }
      this.books.set(id, (book = new IndexBook()));
    }
    return book;
  }

  private reader<T extends TypedObject>(apiVersion: string, name: string): CachedResource<T> {
    const key = nameKey(apiVersion, name);
    if (!this.resolved.has(key) && !this.declared().has(key)) {
      throw new Error(
        `${name} in ${apiVersion} is not watched by this operator, so the cache cannot read it: declare it with @on.cache('${apiVersion}', '${name}') on a handler class (or handle it with any @on.* handler)`,
      );
    }
    const stores = (): {
      resource: Resource | undefined;
      stores: ReturnType<WatchHub['stores']>;
    } => {
      const resource = this.resolved.get(key);
      return { resource, stores: resource ? this.deps.hub.stores(resource) : [] };
    };
    return {
      get: ({ namespace, name: objectName }) => {
        const { resource, stores: found } = stores();
        if (!resource || (resource.namespaced && !namespace)) return undefined;
        return readObject(
          found,
          resource.namespaced ? namespace : undefined,
          objectName,
          this.gate,
        ) as T | undefined;
      },
      list: (query = {}) => {
        const { resource, stores: found } = stores();
        if (!resource) return [];
        return listObjects(
          found,
          { ...query, namespace: resource.namespaced ? query.namespace : undefined },
          this.gate,
        ) as unknown as readonly T[];
      },
    };
  }

  /** Every resource name the operator declares: its handlers', `@on.cache`'s and `@on.index`'s. */
  private declared(): Set<string> {
    const { handlers, caches, indexes } = this.deps.registry;
    return new Set(
      [...handlers, ...caches, ...indexes].map(({ resource }) =>
        nameKey(resource.apiVersion, resource.name),
      ),
    );
  }
}
