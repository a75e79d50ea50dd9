import type { Subscription } from 'rxjs';
import type { Resource } from '../api/resource.js';
import { watchKey, type WatchHub, type WatchScope } from '../watching/watch-hub.js';
import type { ActiveRoute } from './route.js';

/** The scope with `selector` added to its label selector (a watch selects objects matching both). */
export function withSelector(scope: WatchScope, selector: string | undefined): WatchScope {
  if (!selector) return scope;
  return {
    ...scope,
    labelSelector: scope.labelSelector ? `${scope.labelSelector},${selector}` : selector,
  };
}

/**
 * The scope of an heir's watch of a departed member's objects: from the API server's cache, since the
 * heirs need them at once while the control plane is busy.
 */
export function inheritedScope(unsharded: WatchScope, selector: string): WatchScope {
  return { ...withSelector(unsharded, selector), firstListFromCache: true };
}

/**
 * Watches of the objects of members that went quiet (their Lease not renewed for a while) or left
 * without heirs yet: the watches each route would open as their heir, opened before, and holding
 * nothing but the shared stores. Once this replica inherits, its routes' watches of the same scopes
 * find the objects listed (the hub replays its store), so handling starts when the Lease runs out
 * instead of after a listing of the member's whole share. Nothing is handled through these.
 */
export class QuietMemberWatches {
  private readonly open = new Map<string, Subscription>();
  private selectors: readonly string[] = [];

  constructor(private readonly hub: WatchHub) {}

  /**
   * Keeps a watch of each member `selectors` names (by default the last ones named: the routes
   * changed) on each route's scope; closes the others.
   */
  watch(
    routes: Iterable<Pick<ActiveRoute, 'route' | 'unsharded'>>,
    selectors: readonly string[] = this.selectors,
  ): void {
    this.selectors = selectors;
    const wanted = new Map<string, { resource: Resource; scope: WatchScope }>();
    for (const { route, unsharded } of routes)
      for (const selector of selectors) {
        const resource = route.resource;
        const scope = inheritedScope(unsharded.scope, selector);
        wanted.set(watchKey(resource, scope), { resource, scope });
      }
    for (const [key, subscription] of this.open)
      if (!wanted.has(key)) {
        subscription.unsubscribe();
        this.open.delete(key);
      }
    for (const [key, { resource, scope }] of wanted)
      if (!this.open.has(key)) {
        const watching: { subscription?: Subscription; failed?: boolean } = {};
        watching.subscription = this.hub.watch(resource, scope).subscribe({
          // A watch that failed is opened again when the routes or the members change.
          error: () => {
            watching.failed = true;
            if (this.open.get(key) === watching.subscription) this.open.delete(key);
          },
        });
        if (!watching.failed) this.open.set(key, watching.subscription);
      }
  }

  /** Closes every watch (the routes' own watches of the same scopes stay open). */
  stop(): void {
    this.watch([], []);
  }
}
