import { Subscription } from 'rxjs';
import type { ApiClient } from '../api/api-client.js';
import type { HandlerSpec } from '../intents/handler-specs.js';
import type { Logger } from '../observability/logger.js';
import type { WatchHub } from '../watching/watch-hub.js';
import { resolveHandlerResources } from './handler-resolution.js';
import { namespaceScopes } from './namespace-patterns.js';
import type { OperatorCache } from './operator-cache.js';
import { planWatch } from './watch-plan.js';

/** What a {@link WarmStandby} keeps open. */
export interface WarmStandbyServices {
  client: ApiClient;
  hub: WatchHub;
  reads: OperatorCache;
  handlers: readonly HandlerSpec[];
  namespaces: readonly string[] | undefined;
  logger: Logger;
}

/**
 * A standby's watches, opened before it leads: the handlers' watches (in the scopes their routes
 * will use) and the cache's and indexes'. They fill the shared watch stores and stay open, so on
 * taking over the routes find every object already listed (the hub replays its store) and handling
 * starts at once instead of after a listing of the whole fleet. Nothing is handled while standing by.
 */
export class WarmStandby {
  private readonly subscriptions = new Subscription();
  private listing: Promise<boolean> | undefined;

  constructor(private readonly services: WarmStandbyServices) {}

  /** Opens the watches (once). */
  start(): void {
    if (this.listing) return;
    const { client, hub, reads, handlers, namespaces, logger } = this.services;
    this.listing = reads.start();
    this.subscriptions.add(
      resolveHandlerResources(client, handlers, { logger }).subscribe(
        ({ resource, handlers: resolved }) => {
          for (const namespace of namespaceScopes(resource, namespaces).scopes) {
            let scope;
            try {
              scope = planWatch(resolved, namespace).scope;
            } catch {
              continue; // the route reports it when this replica leads
            }
            this.subscriptions.add(
              hub.watch(resource, scope).subscribe({ error: () => undefined }),
            );
          }
        },
      ),
    );
    logger.info('standing by warm: watching as the leader does, handling nothing');
  }

  /** The cache's listing started while standing by (the leader awaits it rather than listing again). */
  get cacheListed(): Promise<boolean> | undefined {
    return this.listing;
  }

  /** Closes the standby's own subscriptions (watches the routes share stay open). */
  stop(): void {
    this.subscriptions.unsubscribe();
  }
}
