import './metadata.js';
import { HANDLERS } from './metadata.js';
import type { EventContext, HandlerDeclaration, HandlerOptions } from '../registry/handler-specs.js';
import type { KubeObject } from '../watching/events.js';

type Method<This, C> = (this: This, context: C) => unknown;

function declare(context: Pick<ClassMethodDecoratorContext, 'static' | 'private' | 'name' | 'metadata'>, declaration: Omit<HandlerDeclaration, 'method'>): void {
  if (context.static || context.private) {
    throw new Error(`@on.${declaration.kind} on ${String(context.name)}: handlers must be public instance methods`);
  }
  const metadata = context.metadata as Record<symbol, HandlerDeclaration[] | undefined> | undefined;
  if (!metadata) throw new Error('decorator metadata is unavailable: import "konductor" before defining handler classes');
  // Own array per class, so a subclass adds to (not mutates) its parent's list.
  const own = Object.prototype.hasOwnProperty.call(metadata, HANDLERS) ? metadata[HANDLERS]! : [...(metadata[HANDLERS] ?? [])];
  own.push({ ...declaration, method: context.name });
  metadata[HANDLERS] = own;
}

/**
 * Decorators that register class methods as handlers.
 *
 * @example
 * ```ts
 * import { on } from 'konductor';
 * class Widgets {
 *   @on.event('example.com/v1', 'widgets')
 *   seen({ type, name, logger }) { logger.info(`${type} ${name}`); }
 * }
 * ```
 */
export const on = {
  /**
   * Runs for every raw watch event (ADDED, MODIFIED, DELETED) of the resource, in order, one at a
   * time per object. Errors are logged and ignored: there is no retry and no progress record.
   * @param apiVersion `group/version`, or `v1` for core resources.
   * @param name plural, kind, singular or short name of the resource.
   */
  event<T extends KubeObject = KubeObject>(apiVersion: string, name: string, options: HandlerOptions<T> = {}) {
    return function <This>(_method: Method<This, EventContext<T>>, context: ClassMethodDecoratorContext<This, Method<This, EventContext<T>>>): void {
      declare(context, { kind: 'event', resource: { apiVersion, name }, options: options as HandlerOptions });
    };
  },
};
