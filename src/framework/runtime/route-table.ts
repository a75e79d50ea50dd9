import { filter, Subscription } from 'rxjs';
import type { ApiClient } from '../api/api-client.js';
import { resourceId, type Resource } from '../api/resource.js';
import type { DaemonEngine } from '../engines/daemons.js';
import type { TimerEngine } from '../engines/timers.js';
import type { HandlerSpec } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { Reactor } from '../reactor/reactor.js';
import type { Storage } from '../state/storage.js';
import type { WatchEvent } from '../watching/watch-events.js';
import type { WatchHub, WatchScope } from '../watching/watch-hub.js';
import type { ShardMember } from '../sharding/shard-member.js';
import { resolveHandlerResources } from './handler-resolution.js';
import { inNamespaces, namespaceScopes } from './namespace-patterns.js';
import type { OperatorCache } from './operator-cache.js';
import { relatedWatches } from './reconcile-watches.js';
import type { OwnerLookup } from './owned-watches.js';
import {
  buildRoute,
  routeEngines,
  type ActiveRoute,
  type Route,
  type RouteReadiness,
  type RouteServices,
} from './route.js';
import { planWatch } from './watch-plan.js';
import { WarmStandby } from './warm-standby.js';
import { inheritedScope, QuietMemberWatches, withSelector } from './quiet-members.js';

/** What a {@link RouteTable} builds routes with. */
export interface RouteTableServices {
  client: ApiClient;
  hub: WatchHub;
  reactor: Reactor<KubeObject, Route>;
  reads: OperatorCache;
  services: RouteServices;
  logger: Logger;
  storage: Storage;
  namespaces: readonly string[] | undefined;
  /** With sharding: the label selector of this replica's objects, added to every route's watch. */
  shardSelector?: string;
}

/**
 * The operator's routes: one per resolved resource and namespace scope, each with its watch, its
 * timers and daemons. Every handler of an object lives in one route, since the reactor keys objects by
 * uid and a second route would take over its events and its diff-base.
 */
export class RouteTable {
  readonly routes = new Map<string, ActiveRoute>();
  /** Routes whose handlers cannot be served (route key -> why), reported by /readyz. */
  readonly broken = new Map<string, string>();
  private readonly engines: Array<TimerEngine | DaemonEngine> = [];
  /** Replaced routes still stopping their timers and daemons; `stop()` waits for them. */
  private readonly detaching = new Set<Promise<void>>();
  /** Resources that keep bookkeeping in annotations despite status storage (no status subresource): said once each. */
  private readonly annotationOnly = new Set<string>();
  /** With sharding: the label selector of the departed members' objects this replica is an heir of. */
  private inheritedSelectors: readonly string[] = [];
  private quiet: QuietMemberWatches | undefined;
  /** Those waiting for inherited watches to list: each says whether it is done (then it is dropped). */
  private readonly listingWaiters = new Set<() => boolean>();

  constructor(private readonly deps: RouteTableServices) {}

  /**
   * Resolves the handlers' resources and attaches a route for each as it resolves; calls `ready` once
   * every resource is resolved and each of its watches has listed (and no route is broken).
   */
  serve(handlers: readonly HandlerSpec[], ready: () => void): Subscription {
    this.broken.clear();
    const unresolved = new Set(handlers);
    const unsynced = new Set<string>();
    const check = (): void => {
      if (unresolved.size === 0 && unsynced.size === 0 && this.broken.size === 0) ready();
    };
    const readiness: RouteReadiness = {
      resolved: (specs) => specs.forEach((spec) => unresolved.delete(spec)),
      listing: (key) => unsynced.add(key),
      listed: (key) => {
        unsynced.delete(key);
        check();
      },
    };
    check();
    return resolveHandlerResources(this.deps.client, handlers, {
      logger: this.deps.logger,
    }).subscribe(({ resource, handlers: resolved }) => this.attach(resource, resolved, readiness));
  }

  /**
   * With sharding: from now on, routes watch only `member`'s objects and runs leave the shard as it
   * says. Called before {@link serve}.
   */
  joinShard(member: ShardMember): void {
    this.deps.shardSelector = member.selector;
    this.deps.services.shard = member;
  }

  /**
   * With sharding: every route also watches the objects of each departed member `selectors` name
   * (their heirs' verdicts pick this replica's share); watches no longer named close.
   */
  inheritShards(selectors: readonly string[]): void {
    if (selectors.join('\n') === this.inheritedSelectors.join('\n')) return;
    this.inheritedSelectors = selectors;
    for (const active of this.routes.values()) this.watchInherited(active);
    this.checkListings();
  }

  /**
   * Runs this replica's share of every inherited object already listed. After a dead heir was dropped,
   * its part of a departed member's objects is this replica's, but those objects were listed and passed
   * over before; without this they would wait for their next change or their relabelling.
   */
  runInheritedShare(): void {
    for (const active of this.routes.values())
      for (const object of this.inheritedShare(active))
        this.deps.reactor.wake({ type: 'MODIFIED', object, fromList: true }, active.route);
  }

  /**
   * Resolves once every route's watch of each of `selectors` (departed members' objects this replica is
   * an heir of, waited for until it inherits them) has listed them, or no longer inherits them (their
   * succession ended, or the routes stopped), or when `signal` aborts.
   */
  inheritedListed(selectors: readonly string[], signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const inherited = new Set<string>();
      const finish = (): void => {
        this.listingWaiters.delete(done);
        signal.removeEventListener('abort', finish);
        resolve();
      };
      const done = (): boolean => {
        const listed = selectors.every((selector) => {
          if (!this.inheritedSelectors.includes(selector)) return inherited.has(selector);
          inherited.add(selector);
          return [...this.routes.values()].every(
            (active) => active.inherited.get(selector)?.listed,
          );
        });
        if (listed) finish();
        return listed;
      };
      if (signal.aborted || done()) return resolve();
      this.listingWaiters.add(done);
      signal.addEventListener('abort', finish, { once: true });
    });
  }

  /**
   * With sharding: watches the objects of each member `selectors` name on every route, as their heir
   * would, before it is one (see {@link QuietMemberWatches}); an empty list closes them.
   */
  watchQuietMembers(selectors: readonly string[]): void {
    (this.quiet ??= new QuietMemberWatches(this.deps.hub)).watch(this.routes.values(), selectors);
  }

  /** Starts a warm standby: the watches `handlers` will need, opened while this replica waits to lead. */
  standBy(handlers: readonly HandlerSpec[]): WarmStandby {
    const { client, hub, reads, logger, namespaces } = this.deps;
    const standby = new WarmStandby({ client, hub, reads, handlers, logger, namespaces });
    standby.start();
    return standby;
  }

  /** The objects this replica handles now: what the routes' watches hold (with sharding: its shard, and its share of departed members' objects). */
  objectCount(): number {
    let count = 0;
    for (const active of this.routes.values()) {
      count += this.deps.hub.stored(active.route.resource, active.scope)?.size ?? 0;
      for (const _ of this.inheritedShare(active)) count++;
    }
    return count;
  }

  /** Starts (or, when more handlers of an already watched resource resolve late, rebuilds) the resource's watch and route per namespace scope. */
  attach(resource: Resource, handlers: readonly HandlerSpec[], readiness: RouteReadiness): void {
    const { hub, reactor, reads, logger } = this.deps;
    readiness.resolved(handlers);
    reads.track(
      resource,
      handlers.map((spec) => spec.resource),
    );
    this.warnIfAnnotationOnly(resource);
    const { scopes, globs } = namespaceScopes(resource, this.deps.namespaces);
    for (const namespace of scopes) {
      const key = JSON.stringify([resourceId(resource), namespace ?? '']);
      const previous = this.routes.get(key);
      const all = [...(previous?.handlers ?? []), ...handlers];
      let plan;
      try {
        plan = planWatch(all, namespace);
      } catch (error) {
        // A mistake in the handler code: /readyz says so (and `ready` waits) rather than serving part of it.
        const message = `${error instanceof Error ? error.message : String(error)}; ${previous ? 'the new handlers are not run' : `${resourceId(resource)} is not watched`} until the handler code is fixed`;
        this.broken.set(key, message);
        logger.error({ resource: resourceId(resource) }, message);
        continue;
      }
      const route = buildRoute(resource, plan.handlers, this.deps.services);
      this.engines.push(...routeEngines(route));
      const scope = withSelector(plan.scope, this.deps.shardSelector);
      const events = hub.watch(resource, scope);
      readiness.listing(key);
      // Children's and watched resources' watches start once the objects are listed, so each event finds its object.
      const inherited: ActiveRoute['inherited'] = new Map();
      const related = relatedWatches(route, resource, scope, {
        client: this.deps.client,
        hub,
        reactor,
        logger,
        namespaces: this.deps.namespaces ?? [],
        cache: reads.cache,
        track: (r, selectors) => reads.track(r, selectors),
        tracing: this.deps.services.tracing,
        owners: this.ownersOf(resource, scope, inherited),
      });
      const subscription = reactor.consume(
        globs ? events.pipe(inNamespaces(globs)) : events,
        route,
        () => {
          readiness.listed(key);
          for (const watches of related) watches.start();
        },
      );
      subscription.add(() => related.forEach((watches) => watches.stop()));
      const active: ActiveRoute = {
        handlers: all,
        route,
        subscription,
        scope,
        unsharded: { scope: plan.scope, globs },
        inherited,
      };
      this.routes.set(key, active);
      this.watchInherited(active);
      if (previous) this.replace(key, previous, resource, namespace);
    }
    this.quiet?.watch(this.routes.values());
  }

  /** Stops watching; resolves once every timer and daemon (replaced routes' too) has stopped. */
  async stop(): Promise<void> {
    for (const active of this.routes.values()) {
      active.subscription.unsubscribe();
      for (const watch of active.inherited.values()) watch.subscription.unsubscribe();
    }
    this.routes.clear();
    this.quiet?.stop();
    this.checkListings();
    await Promise.all([...this.engines.map((engine) => engine.stopAll()), ...this.detaching]);
  }

  /** Settles the waits for inherited listings that are over. */
  private checkListings(): void {
    for (const done of [...this.listingWaiters]) done();
  }

  private warnIfAnnotationOnly(resource: Resource): void {
    const id = resourceId(resource);
    if (this.deps.storage !== 'status' || resource.hasStatus || this.annotationOnly.has(id)) return;
    this.annotationOnly.add(id);
    this.deps.logger.warn(
      { resource: id },
      `${id} has no status subresource, so its diff-base and handler progress are kept in annotations (status storage needs one)`,
    );
  }

  /**
   * Rare: another name of this resource was not served a moment ago. The new route has every handler
   * and replays the listing; the old one goes (after the new subscribed, so a shared watch stays open).
   */
  private replace(
    key: string,
    previous: ActiveRoute,
    resource: Resource,
    namespace: string | undefined,
  ): void {
    const { logger } = this.deps;
    logger.warn(
      { resource: resourceId(resource), namespace },
      'more handlers of a watched resource resolved late: rebuilt its route with all of them',
    );
    const detached = this.detach(key, previous).catch((error: unknown) =>
      logger.error(
        { err: error instanceof Error ? error.message : String(error) },
        'stopping the replaced route failed',
      ),
    );
    this.detaching.add(detached);
    void detached.finally(() => this.detaching.delete(detached));
  }

  /** The route's objects this replica handles: its own watch's, then its share of the inherited ones. */
  private ownersOf(
    resource: Resource,
    scope: WatchScope,
    inherited: ActiveRoute['inherited'],
  ): OwnerLookup {
    const { hub, services } = this.deps;
    const find = (pick: (store: StoredObjects) => KubeObject | undefined) => {
      const own = hub.stored(resource, scope);
      const object = own && pick(own);
      if (object || !services.shard) return object;
      for (const store of this.inheritedStores(resource, inherited)) {
        const found = pick(store);
        if (found && services.shard.owns(resource, found)) return found;
      }
      return undefined;
    };
    return {
      byUid: (uid) => find((store) => store.get(uid)),
      named: (namespace, name) => find((store) => store.named(namespace, name)),
    };
  }

  /** The stores of the departed members' objects a route inherits (with another heir's share in them). */
  private *inheritedStores(
    resource: Resource,
    inherited: ActiveRoute['inherited'],
  ): Generator<StoredObjects> {
    for (const watch of inherited.values()) {
      const store = this.deps.hub.stored(resource, watch.scope);
      if (store) yield store;
    }
  }

  /** A route's share of the departed members' objects it inherits: those this replica handles. */
  private *inheritedShare(active: ActiveRoute): Generator<KubeObject> {
    const { shard } = this.deps.services;
    if (!shard) return;
    const resource = active.route.resource;
    for (const store of this.inheritedStores(resource, active.inherited))
      for (const object of store.values()) if (shard.owns(resource, object)) yield object;
  }

  /**
   * Opens a route's watch of each departed member's objects it inherits, and closes those no longer
   * named. Their events go to the same route, so an object relabelled for this heir, seen leaving one
   * watch and entering the other, stays one object.
   */
  private watchInherited(active: ActiveRoute): void {
    const { hub, reactor, services } = this.deps;
    const { scope: unsharded, globs } = active.unsharded;
    const resource = active.route.resource;
    // Another heir's share never reaches the reactor: this heir never held it (a live heir's share
    // only grows), so there is nothing of it to run or stop, and it is half the objects or more.
    const ours = filter(
      (event: WatchEvent) =>
        event.type === 'SYNCED' || services.shard?.owns(resource, event.object) === true,
    );
    for (const [selector, watch] of active.inherited)
      if (!this.inheritedSelectors.includes(selector)) {
        // Objects still labelled for the departed member when its Lease went (one labelled by the
        // webhook as it left): the coordinator assigns them next, so their timers and daemons stop here.
        const own = hub.stored(resource, active.scope);
        const left = [...(hub.stored(resource, watch.scope)?.values() ?? [])].filter(
          (object) => !own?.has(object.metadata?.uid ?? ''),
        );
        watch.subscription.unsubscribe();
        active.inherited.delete(selector);
        for (const object of left)
          reactor.wake({ type: 'MODIFIED', object, fromList: false }, active.route);
      }
    for (const selector of this.inheritedSelectors) {
      if (active.inherited.has(selector)) continue;
      const scope = inheritedScope(unsharded, selector);
      const events = hub.watch(resource, scope).pipe(ours);
      const watch = { scope, subscription: Subscription.EMPTY, listed: false };
      active.inherited.set(selector, watch);
      watch.subscription = reactor.consume(
        globs ? events.pipe(inNamespaces(globs)) : events,
        active.route,
        () => {
          watch.listed = true;
          this.checkListings();
        },
      );
    }
  }

  /** Stops one route's watch and its timers and daemons. */
  private async detach(key: string, active: ActiveRoute): Promise<void> {
    if (this.routes.get(key) === active) this.routes.delete(key);
    active.subscription.unsubscribe();
    for (const watch of active.inherited.values()) watch.subscription.unsubscribe();
    const engines = routeEngines(active.route);
    for (const engine of engines) {
      const index = this.engines.indexOf(engine);
      if (index >= 0) this.engines.splice(index, 1);
    }
    await Promise.all(engines.map((engine) => engine.stopAll()));
  }
}

type StoredObjects = NonNullable<ReturnType<WatchHub['stored']>>;
