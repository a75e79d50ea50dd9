import type { ApiClient } from '../api/api-client.js';
import type { Logger } from '../observability/logger.js';
import type { EventHandlerSpec } from '../registry/handler-specs.js';
import type { KubeObject, ObjectEvent } from '../watching/events.js';

/**
 * Calls every `@on.event` handler for every raw event of one object, in order. Like Kopf,
 * their errors are logged and ignored: event handlers are fire-and-forget observers.
 */
export async function runEventHandlers(
  handlers: readonly EventHandlerSpec[],
  events: readonly ObjectEvent<KubeObject>[],
  logger: Logger,
  signal: AbortSignal,
  client: ApiClient,
): Promise<void> {
  for (const event of events) {
    const meta = event.object.metadata ?? {};
    for (const handler of handlers) {
      if (signal.aborted) return;
      if (handler.options.when && !handler.options.when(event.object)) continue;
      const handlerLogger = logger.child({ namespace: meta.namespace, name: meta.name, handler: handler.id });
      try {
        await handler.fn({
          type: event.type,
          body: event.object,
          name: meta.name ?? '',
          namespace: meta.namespace,
          uid: meta.uid ?? '',
          logger: handlerLogger,
          signal,
          client,
        });
      } catch (error) {
        handlerLogger.error({ err: error }, `event handler failed (ignored, as for all @on.event handlers): ${describe(error)}`);
      }
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
