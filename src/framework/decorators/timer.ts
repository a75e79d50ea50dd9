import '../registry/metadata.js';
import { declareHandler } from './declare-handler.js';
import { toMilliseconds } from '../clock/duration.js';
import type {
  StatusOf,
  TimerContext,
  TimerOptions,
  TypedObject,
} from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import { resourceArguments, type Kind } from '../objects/kind.js';

/**
 * The decorator `@timer` returns. Without an object type, the context's types are inferred from the
 * method's parameter; with one (`@timer<Widget>(...)`), the method must accept `TimerContext<Widget>`.
 */
export type TimerDecorator<T extends TypedObject = KubeObject> = KubeObject extends T
  ? <This, Spec, Status>(
      method: (this: This, context: TimerContext<Spec, Status>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void
  : <This>(
      method: (this: This, context: TimerContext<T, StatusOf<T>>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void;

/**
 * Runs a method periodically for every matching object, never overlapping itself. Timers hold the
 * object with the framework finalizer while it exists, so its deletion waits for a run in progress;
 * `finalizer: false` opts out, for work that needs no graceful stop (then deleting the object never
 * waits for the operator, even one that is down). Long intervals (>= `persistThreshold`, 60 s by
 * default) survive restarts: the schedule is kept on the object. A returned JSON value is stored at
 * `status[<handler id>]` in the run's write (none when that value is already stored there).
 *
 * @example
 * ```ts
 * @timer('example.com/v1', 'databases', { interval: 'PT1H', initialDelay: 'PT10S', idle: 'PT30S' })
 * async backup({ spec, patch, logger, signal }: TimerContext) { ... }
 * ```
 */
export interface TimerDecoratorFactory {
  <T extends TypedObject>(kind: Kind<T>, options?: TimerOptions<T>): TimerDecorator<T>;
  <T extends TypedObject = KubeObject>(
    apiVersion: string,
    name: string,
    options?: TimerOptions<T>,
  ): TimerDecorator<T>;
}

/** `@timer(kind, options)`: a periodic run per matching object ({@link TimerDecoratorFactory}). */
export const timer: TimerDecoratorFactory = ((first: unknown, ...rest: unknown[]) => {
  const {
    resource,
    rest: [given],
  } = resourceArguments(first, rest, '@timer');
  const options = (given ?? {}) as TimerOptions;
  const name = resource.name;
  // Validate durations now, so a typo fails when the module loads, not at the first tick.
  for (const key of ['initialDelay', 'idle', 'persistThreshold'] as const) {
    const value = options[key];
    if (value !== undefined) toMilliseconds(value, `@timer ${name} ${key}`);
  }
  if (options.interval !== undefined && typeof options.interval !== 'function')
    toMilliseconds(options.interval, `@timer ${name} interval`);
  return (_method: unknown, context: ClassMethodDecoratorContext): void =>
    declareHandler(context, { kind: 'timer', resource, options });
}) as TimerDecoratorFactory;
