import { Observable, merge } from 'rxjs';
import type { ApiClient } from '../api/api-client.js';
import { retryDelayMs } from '../api/api-error.js';
import { discoverResource, ResourceNotFoundError } from '../api/discovery.js';
import { resourceId, type Resource } from '../api/resource.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import type { HandlerSpec } from '../intents/handler-specs.js';
import { Backoff, type BackoffOptions } from '../clock/backoff.js';
import { sleep } from '../clock/long-timeout.js';

/** Handlers that turned out to name one resource (by plural, kind, singular or short name). */
export interface ResolvedHandlers {
  resource: Resource;
  handlers: HandlerSpec[];
}

/**
 * Resolves the resource names handlers were written with and groups the handlers by the resource
 * they actually name, so that `widgets`, `Widget` and `wg` share one watch and one route. The names
 * of one API version are resolved together, so handlers of a resource already served arrive in one
 * group. Names not served yet (a CRD installed later) are logged and retried with backoff (capped
 * at 10 s); they arrive in a later group. Completes once every name is resolved.
 */
export function resolveHandlerResources(
  client: ApiClient,
  handlers: readonly HandlerSpec[],
  options: { logger?: Logger; backoff?: BackoffOptions } = {},
): Observable<ResolvedHandlers> {
  const byApiVersion = new Map<string, HandlerSpec[]>();
  for (const spec of handlers)
    byApiVersion.set(spec.resource.apiVersion, [
      ...(byApiVersion.get(spec.resource.apiVersion) ?? []),
      spec,
    ]);
  return merge(
    ...[...byApiVersion].map(([apiVersion, specs]) =>
      resolveApiVersion(client, apiVersion, specs, options),
    ),
  );
}

function resolveApiVersion(
  client: ApiClient,
  apiVersion: string,
  specs: readonly HandlerSpec[],
  options: { logger?: Logger; backoff?: BackoffOptions },
): Observable<ResolvedHandlers> {
  const logger = options.logger ?? silentLogger();
  return new Observable<ResolvedHandlers>((subscriber) => {
    const stop = new AbortController();
    const backoff = new Backoff({ maxMs: 10_000, jitter: 0.2, ...options.backoff });
    // Keyed by the name as written (case-insensitive): each is looked up once per attempt.
    const pending = new Map<string, HandlerSpec[]>();
    for (const spec of specs) {
      const name = spec.resource.name.toLowerCase();
      pending.set(name, [...(pending.get(name) ?? []), spec]);
    }
    const warned = new Set<string>();
    void (async () => {
      while (pending.size > 0 && !stop.signal.aborted) {
        const names = [...pending.keys()];
        const outcomes = await Promise.allSettled(
          names.map((name) => discoverResource(client, { apiVersion, name })),
        );
        if (stop.signal.aborted) return;
        const found = new Map<string, ResolvedHandlers>();
        let failure: unknown;
        outcomes.forEach((outcome, index) => {
          const name = names[index]!;
          if (outcome.status === 'rejected') {
            failure = outcome.reason;
            const message =
              outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
            // Said loudly once, then quietly: a missing CRD is often a deliberate install order.
            const level =
              warned.has(name) && outcome.reason instanceof ResourceNotFoundError
                ? 'debug'
                : 'warn';
            logger[level](
              { resource: `${name} ${apiVersion}` },
              `cannot resolve ${name} in ${apiVersion}: ${message}; retrying`,
            );
            warned.add(name);
            return;
          }
          if (warned.has(name))
            logger.info(
              { resource: `${name} ${apiVersion}` },
              'resource is now served; starting to watch',
            );
          const id = resourceId(outcome.value);
          const group = found.get(id) ?? { resource: outcome.value, handlers: [] };
          group.handlers.push(...pending.get(name)!);
          found.set(id, group);
          pending.delete(name);
        });
        for (const group of found.values()) subscriber.next(group);
        if (pending.size === 0) break;
        await sleep(retryDelayMs(failure, backoff.next()), stop.signal); // resolves (never rejects) when stopped
      }
      if (!stop.signal.aborted) subscriber.complete();
    })();
    return () => stop.abort();
  });
}
