import { inSpan } from '../observability/tracing.js';
import type { ApiClient } from '../api/api-client.js';
import { withTimeLimit } from '../clock/time-limit.js';
import type { Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import type { EventHandlerSpec } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { ObjectEvent } from '../watching/watch-events.js';
import { asError, describeError } from '../intents/errors.js';
import { matchesObject, PRESENT, type ObjectFilters } from '../intents/filters.js';
import { currentCacheAccess } from '../intents/cache-scope.js';
import { defineMemo, ObjectMemos } from '../intents/memo.js';
import { detachedScope, type FilterScope } from '../intents/filter-context.js';

/**
 * Calls every `@on.event` handler for every raw event of one object, in order. Like Kopf,
 * their errors are logged and ignored: event handlers are fire-and-forget observers.
 * Each run is counted like a change handler's: `handler_runs_total` (`success` or `failure`)
 * and `handler_duration_seconds`, labelled with the handler's id. Anything thrown is a failure,
 * `undefined` included. With `timeoutMs`, a run taking longer has its signal aborted, counts as a
 * failure and is not waited for, so a hung observer cannot hold the object's worker slot. `scope`
 * gives `when` and the handlers the object's resource and memo (the operator's memos).
 */
export async function runEventHandlers(
  handlers: readonly EventHandlerSpec[],
  events: readonly ObjectEvent<KubeObject>[],
  logger: Logger,
  signal: AbortSignal,
  client: ApiClient,
  metrics: Metrics = noMetrics,
  timeoutMs?: number,
  scope: FilterScope = detachedScope(),
): Promise<void> {
  for (const event of events) {
    const meta = event.object.metadata ?? {};
    for (const handler of handlers) {
      if (signal.aborted) return;
      // As in Kopf: `field` without `value` means "the field is present".
      const filters: ObjectFilters =
        handler.options.field !== undefined && handler.options.value === undefined
          ? { ...handler.options, value: PRESENT }
          : handler.options;
      if (!matchesObject(event.object, filters, scope)) continue;
      const handlerLogger = logger.child({
        namespace: meta.namespace,
        name: meta.name,
        handler: handler.id,
      });
      const began = performance.now();
      let result: 'success' | 'failure' = 'success';
      const attributes = { 'konductor.handler.id': handler.id, 'konductor.event.type': event.type };
      try {
        await inSpan(`event ${handler.id}`, { attributes }, () =>
          withTimeLimit(
            (attemptSignal) =>
              handler.fn(
                defineMemo(
                  {
                    type: event.type,
                    body: event.object,
                    name: meta.name ?? '',
                    namespace: meta.namespace,
                    uid: meta.uid ?? '',
                    logger: handlerLogger,
                    signal: attemptSignal,
                    client,
                    spec: (event.object.spec ?? {}) as Record<string, unknown>,
                    status: event.object.status as Record<string, unknown> | undefined,
                    metadata: meta,
                    labels: meta.labels ?? {},
                    annotations: meta.annotations ?? {},
                    resource: scope.resource,
                    ...currentCacheAccess(),
                  },
                  scope.memos ?? new ObjectMemos(),
                  meta.uid ?? '',
                ),
              ),
            timeoutMs,
            signal,
          ),
        );
      } catch (thrown) {
        const error = asError(thrown);
        result = 'failure';
        handlerLogger.error(
          { err: error },
          `event handler failed (ignored, as for all @on.event handlers): ${describeError(error)}`,
        );
      }
      metrics.observe?.('handler_duration_seconds', (performance.now() - began) / 1000, {
        handler: handler.id,
      });
      metrics.increment('handler_runs_total', { handler: handler.id, result });
    }
  }
}
