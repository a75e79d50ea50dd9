import type { Link } from '@opentelemetry/api';
import { eventLink, type Tracing } from '../observability/tracing.js';
import { merge, mergeMap, Subscription, type Observable } from 'rxjs';
import type { ApiClient } from '../api/api-client.js';
import { resourceId, type Resource, type ResourceSelector } from '../api/resource.js';
import type { OwnedSpec } from '../intents/owned-specs.js';
import { controllerOwnerOf, mayOwn } from '../objects/controller-owner.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { Reactor } from '../reactor/reactor.js';
import type { WatchEvent } from '../watching/watch-events.js';
import { resolveResource } from '../watching/resource-resolver.js';
import type { WatchHub, WatchScope } from '../watching/watch-hub.js';
import { inNamespaces, isNamespaceGlob } from './namespace-patterns.js';
import type { Route } from './route.js';

/** What the child watches of an operator share. */
export interface OwnedWatchServices {
  client: ApiClient;
  hub: WatchHub;
  reactor: Reactor<KubeObject, Route>;
  logger: Logger;
  /** The operator's `namespaces` (names or globs); empty: all namespaces. */
  namespaces: readonly string[];
  /** Makes a resolved child resource readable through `ctx.cache` (its watch store is the cache). */
  track?: (resource: Resource, selectors: readonly ResourceSelector[]) => void;
  /** Records each child event that wakes an owner, linked from the owner's next run. */
  tracing?: Tracing;
  /** Finds the owner of a child's event among the objects this replica handles. */
  owners: OwnerLookup;
}

/**
 * The objects of the owner route this replica handles, by uid or by namespace and name: its watch's
 * store, and with sharding its share of departed members' objects (their watches' stores). No API call.
 */
export interface OwnerLookup {
  byUid(uid: string): KubeObject | undefined;
  named(namespace: string, name: string): KubeObject | undefined;
}

/** A span for a child's event, which the owner's next run links to (why it ran). */
export function childEventLink(
  tracing: Tracing,
  type: string,
  child: KubeObject,
): Link | undefined {
  const meta = child.metadata ?? {};
  return eventLink(tracing, `child ${type} ${child.kind ?? 'object'}`, {
    'k8s.namespace.name': meta.namespace ?? '',
    'konductor.object.name': meta.name ?? '',
    'konductor.object.resource_version': meta.resourceVersion ?? '',
  });
}

/** One watch of a child resource: its scope, and whether its events must be kept to the operator's namespace globs. */
export interface ChildWatchScope {
  scope: WatchScope;
  globs?: readonly string[];
}

/**
 * Where to watch a child resource for an owner route watching `ownerNamespace`: the owner's namespace
 * (owner references never cross namespaces); for a cluster-wide owner route, the operator's namespaces
 * (one cluster-wide watch filtered per event when any is a glob), or the whole cluster without any.
 */
export function childWatchScopes(
  child: Pick<Resource, 'namespaced'>,
  ownerNamespace: string | undefined,
  namespaces: readonly string[],
  labelSelector?: string,
): ChildWatchScope[] {
  if (ownerNamespace !== undefined)
    return [{ scope: { namespace: ownerNamespace, labelSelector } }];
  const patterns = child.namespaced ? [...new Set(namespaces)] : [];
  if (patterns.length === 0) return [{ scope: { labelSelector } }];
  if (patterns.some(isNamespaceGlob)) return [{ scope: { labelSelector }, globs: patterns }];
  return patterns.map((namespace) => ({ scope: { namespace, labelSelector } }));
}

/**
 * The events of a related resource (children, or a resource a map function reads) as the operator's
 * watches deliver them: resolved by discovery, readable through the cache, watched in `namespace`
 * (children: their owner's) or, without one, in the operator's namespaces.
 */
export function relatedEvents(
  services: OwnedWatchServices,
  selector: ResourceSelector,
  namespace: string | undefined,
  labelSelector: string | undefined,
): Observable<WatchEvent> {
  const { client, hub, logger, namespaces } = services;
  return resolveResource(client, selector, { logger }).pipe(
    mergeMap((resource) => {
      services.track?.(resource, [selector]);
      const watches = childWatchScopes(
        resource,
        resource.namespaced ? namespace : undefined,
        namespaces,
        labelSelector,
      ).map(({ scope, globs }) => {
        const stream = hub.watch(resource, scope);
        return globs ? stream.pipe(inNamespaces(globs)) : stream;
      });
      return merge(...watches) as Observable<WatchEvent>;
    }),
  );
}

/**
 * The child watches of one owner route's `@on.owned` handlers. Started once the owners are listed
 * (so a listed child finds its owner in the owner watch's store); each child event that names a
 * listed, live owner of this resource as its controller is offered to the route's owned processor,
 * and the owner is woken in the reactor (keyed by its uid, so serialized with its other handlers).
 */
export class OwnedWatches {
  private readonly subscriptions = new Subscription();
  private started = false;

  constructor(
    private readonly route: Route,
    private readonly owner: Resource,
    private readonly ownerScope: WatchScope,
    private readonly services: OwnedWatchServices,
  ) {}

  /** Starts the child watches (once; never after {@link stop}). */
  start(): void {
    if (this.started || this.subscriptions.closed) return;
    this.started = true;
    for (const spec of this.route.owned?.handlers ?? [])
      this.subscriptions.add(this.watchChildren(spec));
  }

  /** Stops the child watches (a shared watch stays open for its other subscribers). */
  stop(): void {
    this.subscriptions.unsubscribe();
  }

  private watchChildren(spec: OwnedSpec): Subscription {
    const { logger } = this.services;
    return relatedEvents(
      this.services,
      spec.child.resource,
      this.ownerScope.namespace,
      spec.child.labelSelector,
    ).subscribe({
      next: (event) => this.deliver(spec, event),
      error: (error: unknown) =>
        logger.error(
          { err: error, handler: spec.id, owner: resourceId(this.owner) },
          `the child watch of owned handler ${spec.id} failed: ${error instanceof Error ? error.message : String(error)}`,
        ),
    });
  }

  private deliver(spec: OwnedSpec, event: WatchEvent): void {
    if (event.type === 'SYNCED') return;
    const child = event.object;
    const reference = controllerOwnerOf(child, this.owner);
    if (!reference) return;
    // Not listed yet, gone, or being deleted: nothing to run.
    const owner = this.services.owners.byUid(reference.uid);
    if (!owner || !mayOwn(owner, child) || owner.metadata?.deletionTimestamp) return;
    this.route.owned?.offer(reference.uid, spec.id, { event: event.type, child });
    const link = this.services.tracing && childEventLink(this.services.tracing, event.type, child);
    this.services.reactor.wake(
      { type: 'MODIFIED', object: owner, fromList: event.fromList },
      this.route,
      link,
    );
  }
}
