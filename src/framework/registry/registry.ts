import { HANDLERS, METADATA } from './metadata.js';
import type {
  ChangeHandlerFn,
  ChangeHandlerOptions,
  ChangeHandlerSpec,
  DaemonHandlerFn,
  DaemonOptions,
  EventHandlerFn,
  HandlerDeclaration,
  HandlerSpec,
  TimerHandlerFn,
  TimerOptions,
} from '../handler/handler-specs.js';
import type { ActivityKind, ActivityFn, ActivitySpec, CleanupOptions, ProbeOptions, StartupOptions } from '../handler/activity-specs.js';
import { activityDeclarationsOf, activitySpecsOf, checkActivityId } from './activities.js';

/** A class whose methods carry handler decorators. */
export type HandlerClass = new () => object;

function declarationsOf(cls: HandlerClass): HandlerDeclaration[] {
  const metadata = (cls as unknown as Record<symbol, Record<symbol, HandlerDeclaration[] | undefined> | undefined>)[METADATA];
  return metadata?.[HANDLERS] ?? [];
}

/** A stable key for grouping handlers by resource. */
function selectorKey(spec: Pick<HandlerSpec, 'resource'>): string {
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
    if (declarationsOf(cls).length === 0 && activityDeclarationsOf(cls).length === 0) {
      throw new Error(`${cls.name || 'the class'} has no handler decorators (@on.*, @timer, @daemon)`);
    }
    return this.addInstance(new cls());
  }

  /**
   * Registers the decorated methods of an instance built by the caller, for handler classes that
   * take options (say, where a storage backend or address scheme comes from).
   */
  addInstance(instance: object): this {
    const cls = instance.constructor as HandlerClass;
    const declarations = declarationsOf(cls);
    if (declarations.length === 0 && activityDeclarationsOf(cls).length === 0) {
      throw new Error(`${cls.name || 'the object'} has no handler decorators (@on.*, @timer, @daemon)`);
    }
    const methods = instance as Record<string | symbol, unknown>;
    for (const declaration of declarations) {
      const method = methods[declaration.method];
      if (typeof method !== 'function') throw new Error(`${cls.name}.${String(declaration.method)} is not a method`);
      const fn = (method as (...args: unknown[]) => unknown).bind(instance);
      const field = (declaration.options as ChangeHandlerOptions).field;
      const id = declaration.options.id ?? `${cls.name}.${String(declaration.method)}${field ? `/${field}` : ''}`;
      const { resource, options } = declaration;
      if (declaration.kind === 'event') this.register({ kind: 'event', id, resource, options, fn: fn as EventHandlerFn });
      else if (declaration.kind === 'timer') this.register({ kind: 'timer', id, resource, options: options as TimerOptions, fn: fn as TimerHandlerFn });
      else if (declaration.kind === 'daemon') this.register({ kind: 'daemon', id, resource, options: options as DaemonOptions, fn: fn as DaemonHandlerFn });
      else this.register({ kind: declaration.kind, id, resource, options, fn: fn as ChangeHandlerFn });
    }
    // Activities (@on.startup, @on.cleanup, @on.probe).
    for (const spec of activitySpecsOf(instance)) this.addActivity(spec);
    return this;
  }

  /**
   * Registers a change handler as a plain function, for JavaScript users and generated handlers.
   * @example registry.change('create', { apiVersion: 'example.com/v1', name: 'widgets' }, async ({ patch }) => { ... }, { id: 'widgets.create' })
   */
  change<Spec = Record<string, unknown>, Status = Record<string, unknown>>(
    kind: ChangeHandlerSpec['kind'],
    resource: { apiVersion: string; name: string },
    fn: ChangeHandlerFn<Spec, Status>,
    options: ChangeHandlerOptions & { id: string },
  ): this {
    return this.register({ kind, id: options.id, resource, options, fn: fn as ChangeHandlerFn });
  }

  /** Registers a timer as a plain function. */
  timer(resource: { apiVersion: string; name: string }, fn: TimerHandlerFn, options: TimerOptions & { id: string }): this {
    return this.register({ kind: 'timer', id: options.id, resource, options, fn });
  }

  /** Registers a daemon as a plain function. */
  daemon(resource: { apiVersion: string; name: string }, fn: DaemonHandlerFn, options: DaemonOptions & { id: string }): this {
    return this.register({ kind: 'daemon', id: options.id, resource, options, fn });
  }

  /** Every registered handler. */
  get handlers(): readonly HandlerSpec[] {
    return this.specs;
  }

  // Activities (issue 16, lifecycle): operator-wide handlers with no resource, kept apart from `handlers`.
  private readonly activitySpecs: ActivitySpec[] = [];

  /**
   * Registers an activity handler as a plain function (`startup`, `cleanup` or `probe`); ids must be unique per activity.
   * @example registry.activity('startup', async ({ memo }) => { memo.pool = await connect(); }, { id: 'connect' })
   */
  activity(kind: ActivityKind, fn: ActivityFn, options: (StartupOptions | CleanupOptions | ProbeOptions) & { id: string }): this {
    return this.addActivity({ kind, id: options.id, options, fn });
  }

  private addActivity(spec: ActivitySpec): this {
    checkActivityId(this.activitySpecs, spec);
    this.activitySpecs.push(spec);
    return this;
  }

  /** Every registered activity handler, in declaration order. */
  get activities(): readonly ActivitySpec[] {
    return this.activitySpecs;
  }
}
