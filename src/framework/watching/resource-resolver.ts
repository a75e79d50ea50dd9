import { Observable } from 'rxjs';
import type { ApiClient } from '../api/api-client.js';
import { retryDelayMs } from '../api/api-error.js';
import { discoverResource, ResourceNotFoundError } from '../api/discovery.js';
import type { Resource, ResourceSelector } from '../api/resource.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import { Backoff, type BackoffOptions } from '../clock/backoff.js';
import { sleep } from '../clock/long-timeout.js';

/**
 * Emits the resolved resource once discovery knows it, then completes. A missing CRD or an
 * unreachable server is logged and retried with backoff (capped at 10 s so a CRD installed
 * later is picked up quickly), never thrown.
 */
export function resolveResource(
  client: ApiClient,
  selector: ResourceSelector,
  options: { logger?: Logger; backoff?: BackoffOptions } = {},
): Observable<Resource> {
  const logger = options.logger ?? silentLogger();
  return new Observable<Resource>((subscriber) => {
    const stop = new AbortController();
    const backoff = new Backoff({ maxMs: 10_000, jitter: 0.2, ...options.backoff });
    void (async () => {
      let warned = false;
      while (!stop.signal.aborted) {
        try {
          const resource = await discoverResource(client, selector);
          if (warned)
            logger.info(
              { resource: `${selector.name} ${selector.apiVersion}` },
              'resource is now served; starting to watch',
            );
          subscriber.next(resource);
          subscriber.complete();
          return;
        } catch (error) {
          const delay = retryDelayMs(error, backoff.next());
          const message = error instanceof Error ? error.message : String(error);
          // Say it loudly once, then quietly: a missing CRD is often a deliberate install order.
          logger[warned && error instanceof ResourceNotFoundError ? 'debug' : 'warn'](
            { delayMs: Math.round(delay) },
            `cannot resolve ${selector.name} in ${selector.apiVersion}: ${message}; retrying`,
          );
          warned = true;
          // Resolves early when unsubscribed; the loop then ends.
          await sleep(delay, stop.signal);
        }
      }
    })();
    return () => stop.abort();
  });
}
