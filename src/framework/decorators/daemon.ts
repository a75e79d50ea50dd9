import '../registry/metadata.js';
import { declareHandler } from './declare-handler.js';
import { toMilliseconds } from '../clock/duration.js';
import type {
  DaemonContext,
  DaemonOptions,
  StatusOf,
  TypedObject,
} from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import { resourceArguments, type Kind } from '../objects/kind.js';

/**
 * The decorator `@daemon` returns. Without an object type, the context's types are inferred from the
 * method's parameter; with one (`@daemon<Widget>(...)`), the method must accept `DaemonContext<Widget>`.
 */
export type DaemonDecorator<T extends TypedObject = KubeObject> = KubeObject extends T
  ? <This, Spec, Status>(
      method: (this: This, context: DaemonContext<Spec, Status>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void
  : <This>(
      method: (this: This, context: DaemonContext<T, StatusOf<T>>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void;

/**
 * Runs a long-lived method for every matching object until the object is deleted or stops matching,
 * or the operator stops. A daemon that returns is not restarted (a JSON value it returns is stored
 * at `status[<handler id>]`, unless it was asked to stop); one that throws is restarted with backoff.
 * Deletion waits (up to `cancellationTimeout`) for the daemon to exit, as the framework finalizer
 * holds the object; `finalizer: false` opts out, for work that needs no graceful stop (then
 * deleting the object never waits for the operator, even one that is down).
 *
 * @example
 * ```ts
 * @daemon('example.com/v1', 'widgets', { cancellationTimeout: 'PT10S' })
 * async watchExternal({ signal, logger }: DaemonContext) { while (!signal.aborted) { ... } }
 * ```
 */
export interface DaemonDecoratorFactory {
  <T extends TypedObject>(kind: Kind<T>, options?: DaemonOptions<T>): DaemonDecorator<T>;
  <T extends TypedObject = KubeObject>(
    apiVersion: string,
    name: string,
    options?: DaemonOptions<T>,
  ): DaemonDecorator<T>;
}

/** `@daemon(kind, options)`: one long-lived run per matching object ({@link DaemonDecoratorFactory}). */
export const daemon: DaemonDecoratorFactory = ((first: unknown, ...rest: unknown[]) => {
  const {
    resource,
    rest: [given],
  } = resourceArguments(first, rest, '@daemon');
  const options = (given ?? {}) as DaemonOptions;
  for (const key of ['initialDelay', 'cancellationBackoff', 'cancellationTimeout'] as const) {
    const value = options[key];
    if (value !== undefined) toMilliseconds(value, `@daemon ${resource.name} ${key}`);
  }
  return (_method: unknown, context: ClassMethodDecoratorContext): void =>
    declareHandler(context, { kind: 'daemon', resource, options });
}) as DaemonDecoratorFactory;
