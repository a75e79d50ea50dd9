import { HANDLERS, METADATA } from '../decorators/metadata.js';
import type { EventHandlerFn, HandlerDeclaration, HandlerSpec } from './handler-specs.js';

/** A class whose methods carry handler decorators. */
export type HandlerClass = new () => object;

/** A stable key for grouping handlers by resource. */
export function selectorKey(spec: Pick<HandlerSpec, 'resource'>): string {
  return `${spec.resource.apiVersion} ${spec.resource.name.toLowerCase()}`;
}

/**
 * All handlers an operator runs: from decorated classes ({@link addClass}) or registered as plain
 * functions ({@link register}), for JavaScript users and generated handlers.
 */
export class Registry {
  private readonly specs: HandlerSpec[] = [];

  /** Registers one handler; ids must be unique per resource. */
  register(spec: HandlerSpec): this {
    const clash = this.specs.find((s) => s.id === spec.id && selectorKey(s) === selectorKey(spec));
    if (clash) throw new Error(`handler id '${spec.id}' is registered twice for ${spec.resource.name}; give one an explicit id`);
    this.specs.push(spec);
    return this;
  }

  /** Instantiates a decorated class once and registers each decorated method, bound to that instance. */
  addClass(cls: HandlerClass): this {
    const metadata = (cls as unknown as Record<symbol, Record<symbol, HandlerDeclaration[] | undefined> | undefined>)[METADATA];
    const declarations = metadata?.[HANDLERS] ?? [];
    if (declarations.length === 0) {
      throw new Error(`${cls.name || 'the class'} has no handler decorators (@on.*, @timer, @daemon)`);
    }
    const instance = new cls() as Record<string | symbol, unknown>;
    for (const declaration of declarations) {
      const method = instance[declaration.method];
      if (typeof method !== 'function') throw new Error(`${cls.name}.${String(declaration.method)} is not a method`);
      const fn = (method as (...args: unknown[]) => unknown).bind(instance) as EventHandlerFn;
      this.register({
        kind: declaration.kind,
        id: declaration.options.id ?? `${cls.name}.${String(declaration.method)}`,
        resource: declaration.resource,
        options: declaration.options,
        fn,
      });
    }
    return this;
  }

  /** Every registered handler. */
  get handlers(): readonly HandlerSpec[] {
    return this.specs;
  }

  /** Handlers grouped by the resource they watch. */
  byResource(): Map<string, HandlerSpec[]> {
    const groups = new Map<string, HandlerSpec[]>();
    for (const spec of this.specs) {
      const key = selectorKey(spec);
      groups.set(key, [...(groups.get(key) ?? []), spec]);
    }
    return groups;
  }
}
