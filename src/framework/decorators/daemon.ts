import './metadata.js';
import { declareHandler } from './on.js';
import { toMilliseconds } from '../engines/duration.js';
import type { DaemonContext, DaemonOptions } from '../registry/handler-specs.js';
import type { KubeObject } from '../watching/events.js';

/**
 * Runs a long-lived method for every matching object until the object is deleted or stops matching,
 * or the operator stops. A daemon that returns is not restarted; one that throws is restarted with
 * backoff. Deletion waits (up to `cancellationTimeout`) for the daemon to exit.
 *
 * @example
 * ```ts
 * @daemon('example.com/v1', 'widgets', { cancellationTimeout: 'PT10S' })
 * async watchExternal({ signal, logger }: DaemonContext) { while (!signal.aborted) { ... } }
 * ```
 */
export function daemon<T extends KubeObject = KubeObject>(apiVersion: string, name: string, options: DaemonOptions<T> = {}) {
  for (const key of ['initialDelay', 'cancellationBackoff', 'cancellationTimeout'] as const) {
    const value = options[key];
    if (value !== undefined) toMilliseconds(value, `@daemon ${name} ${key}`);
  }
  return function <This, Spec, Status>(
    _method: (this: This, context: DaemonContext<Spec, Status>) => unknown,
    context: ClassMethodDecoratorContext<This>,
  ): void {
    declareHandler(context, { kind: 'daemon', resource: { apiVersion, name }, options: options as DaemonOptions });
  };
}
