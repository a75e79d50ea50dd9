import type { Link } from '@opentelemetry/api';
import { Subscription } from 'rxjs';
import { resourceId, type Resource, type ResourceSelector } from '../api/resource.js';
import type { Cache } from '../intents/cache-contract.js';
import type { MappedKeys, ObjectKey } from '../intents/reconcile-specs.js';
import { controllerOwnerOf, mayOwn } from '../objects/controller-owner.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { WatchEvent } from '../watching/watch-events.js';
import type { WatchScope } from '../watching/watch-hub.js';
import {
  childEventLink,
  OwnedWatches,
  relatedEvents,
  type OwnedWatchServices,
} from './owned-watches.js';
import type { Route } from './route.js';

/** What the watches of a reconcile's `owns` and `watches` share: the child watches' services, and what map functions read. */
export interface ReconcileWatchServices extends OwnedWatchServices {
  cache: Cache;
}

/** The keys a map function returned, checked: attacker-shaped objects must not make it throw the watch away. */
export function mappedKeys(keys: MappedKeys, fallbackNamespace: string | undefined): ObjectKey[] {
  if (keys === undefined || keys === null) return [];
  const list: readonly unknown[] = Array.isArray(keys) ? keys : [keys];
  return list.flatMap((key) => {
    const { namespace, name } = (key ?? {}) as Partial<ObjectKey>;
    if (
      typeof name !== 'string' ||
      name === '' ||
      (namespace !== undefined && typeof namespace !== 'string')
    )
      return [];
    return [{ namespace: namespace ?? fallbackNamespace, name }];
  });
}

/**
 * The watches that wake a reconciled resource's objects: its children (`owns`: a child event reaches
 * the object its controller owner reference names, when that object is listed, live and may own it),
 * and other resources (`watches`: a map function names the objects). Started once the reconciled
 * objects are listed, so the initial listings find them. Woken objects run in the reactor, serialized
 * with their other handlers.
 */
export class ReconcileWatches {
  private readonly subscriptions = new Subscription();
  private started = false;

  constructor(
    private readonly route: Route,
    private readonly owner: Resource,
    private readonly ownerScope: WatchScope,
    private readonly services: ReconcileWatchServices,
  ) {}

  /** Starts the watches (once; never after {@link stop}). */
  start(): void {
    const spec = this.route.reconcile?.handler;
    if (this.started || this.subscriptions.closed || !spec) return;
    this.started = true;
    for (const child of spec.owns)
      this.subscriptions.add(
        this.watchResource(child.resource, child.labelSelector, true, (event) =>
          this.fromChild(event),
        ),
      );
    for (const relation of spec.watches) {
      this.subscriptions.add(
        this.watchResource(relation.resource, relation.labelSelector, false, (event) =>
          this.fromMapped(event, relation.map),
        ),
      );
    }
  }

  stop(): void {
    this.subscriptions.unsubscribe();
  }

  /** Children live in their owner's namespace (owner references never cross one); watched objects anywhere the operator watches. */
  private watchResource(
    selector: ResourceSelector,
    labelSelector: string | undefined,
    children: boolean,
    deliver: (event: WatchEvent) => void,
  ): Subscription {
    const { logger } = this.services;
    const id = this.route.reconcile?.handler.id;
    return relatedEvents(
      this.services,
      selector,
      children ? this.ownerScope.namespace : undefined,
      labelSelector,
    ).subscribe({
      next: (event) => {
        if (event.type !== 'SYNCED') deliver(event);
      },
      error: (error: unknown) =>
        logger.error(
          { err: error, handler: id, resource: resourceId(this.owner) },
          `a watch of reconcile ${id} (${selector.name} ${selector.apiVersion}) failed: ${error instanceof Error ? error.message : String(error)}`,
        ),
    });
  }

  private fromChild(event: WatchEvent): void {
    if (event.type === 'SYNCED') return;
    const child = event.object;
    const reference = controllerOwnerOf(child, this.owner);
    if (!reference) return;
    const owner = this.services.owners.byUid(reference.uid);
    if (!owner || !mayOwn(owner, child)) return;
    const tracing = this.services.tracing;
    this.wake(owner, event.fromList, tracing && childEventLink(tracing, event.type, child));
  }

  private fromMapped(
    event: WatchEvent,
    map: (object: never, context: { cache: Cache }) => MappedKeys,
  ): void {
    if (event.type === 'SYNCED') return;
    const object = event.object;
    let keys: ObjectKey[];
    try {
      keys = mappedKeys(
        map(object as never, { cache: this.services.cache }),
        object.metadata?.namespace,
      );
    } catch (error) {
      const meta = object.metadata ?? {};
      this.services.logger.error(
        {
          err: error,
          handler: this.route.reconcile?.handler.id,
          namespace: meta.namespace,
          name: meta.name,
        },
        `the map function of reconcile ${this.route.reconcile?.handler.id} failed for ${meta.namespace ? `${meta.namespace}/` : ''}${meta.name}: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    for (const key of keys) {
      const namespace = this.owner.namespaced ? (key.namespace ?? '') : '';
      const target = this.services.owners.named(namespace, key.name);
      if (target) this.wake(target, event.fromList);
    }
  }

  private wake(owner: KubeObject, fromList: boolean, link?: Link): void {
    const uid = owner.metadata?.uid;
    if (!uid || !this.route.reconcile) return;
    this.route.reconcile.wake(uid);
    this.services.reactor.wake({ type: 'MODIFIED', object: owner, fromList }, this.route, link);
  }
}

/** The watches that wake a route's objects (`@on.owned` children, a reconcile's `owns` and `watches`): started once the route's objects are listed. */
export function relatedWatches(
  route: Route,
  resource: Resource,
  scope: WatchScope,
  services: ReconcileWatchServices,
): Array<{ start(): void; stop(): void }> {
  const watches: Array<{ start(): void; stop(): void }> = [];
  if (route.owned) watches.push(new OwnedWatches(route, resource, scope, services));
  if (route.reconcile) watches.push(new ReconcileWatches(route, resource, scope, services));
  return watches;
}
