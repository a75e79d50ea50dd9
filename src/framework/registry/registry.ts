import { HANDLERS, METADATA } from './metadata.js';
import { stackedOnOneMethod } from '../intents/handler-specs.js';
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
} from '../intents/handler-specs.js';
import { ownedSpec, type OwnedHandlerFn, type OwnedOptions } from '../intents/owned-specs.js';
import type { CacheSpec, IndexFn, IndexSpec } from '../intents/cache-contract.js';
import {
  reconcileSpec,
  type ReconcileHandlerFn,
  type ReconcileOptions,
} from '../intents/reconcile-specs.js';
import { cacheDeclarationsOf, indexDeclarationsOf } from './cache-declarations.js';
import type {
  ActivityKind,
  ActivityFn,
  ActivitySpec,
  CleanupOptions,
  ProbeOptions,
  StartupOptions,
} from '../intents/activity-specs.js';
import {
  activityDeclarationsOf,
  activitySpecsOf,
  checkActivityId,
} from './activity-declarations.js';
// Admission webhooks.
import {
  checkAdmissionOptions,
  type AdmissionSpec,
  type ConversionSpec,
} from '../intents/admission-specs.js';
import {
  admissionDeclarationsOf,
  admissionSpecsOf,
  checkAdmissionId,
  checkConversion,
  conversionDeclarationsOf,
  conversionSpecsOf,
} from './admission-declarations.js';

/** A class whose methods carry handler decorators. */
export type HandlerClass = new () => object;

function declarationsOf(cls: HandlerClass): HandlerDeclaration[] {
  const metadata = (
    cls as unknown as Record<symbol, Record<symbol, HandlerDeclaration[] | undefined> | undefined>
  )[METADATA];
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
    const clash = this.specs.find(
      (s) =>
        s.id === spec.id && selectorKey(s) === selectorKey(spec) && !stackedOnOneMethod(s, spec),
    );
    if (clash)
      throw new Error(
        `handler id '${spec.id}' is registered twice for ${spec.resource.name}; give one an explicit id`,
      );
    this.specs.push(spec);
    return this;
  }

  /** Instantiates a decorated class once and registers each decorated method, bound to that instance. */
  addClass(cls: HandlerClass): this {
    if (
      declarationsOf(cls).length === 0 &&
      !hasCacheDeclarations(cls) &&
      activityDeclarationsOf(cls).length === 0 &&
      !hasAdmissionDeclarations(cls)
    ) {
      throw new Error(
        `${cls.name || 'the class'} has no handler decorators (@on.*, @timer, @daemon)`,
      );
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
    if (
      declarations.length === 0 &&
      !hasCacheDeclarations(cls) &&
      activityDeclarationsOf(cls).length === 0 &&
      !hasAdmissionDeclarations(cls)
    ) {
      throw new Error(
        `${cls.name || 'the object'} has no handler decorators (@on.*, @timer, @daemon)`,
      );
    }
    const methods = instance as Record<string | symbol, unknown>;
    // One bound function per method: decorators stacked on it make one handler with several causes.
    const bound = new Map<string | symbol, (...args: unknown[]) => unknown>();
    for (const declaration of declarations) {
      const method = methods[declaration.method];
      if (typeof method !== 'function')
        throw new Error(`${cls.name}.${String(declaration.method)} is not a method`);
      let fn = bound.get(declaration.method);
      if (!fn)
        bound.set(
          declaration.method,
          (fn = (method as (...args: unknown[]) => unknown).bind(instance)),
        );
      const field = (declaration.options as ChangeHandlerOptions).field;
      const suffix = field ? `/${field}` : '';
      const id = declaration.options.id ?? `${String(declaration.method)}${suffix}`;
      // Default ids were `Class.method`: progress and timer schedules stored under them are still found.
      const legacyIds =
        declaration.options.id === undefined
          ? [`${cls.name}.${String(declaration.method)}${suffix}`]
          : undefined;
      const { resource, options } = declaration;
      if (declaration.kind === 'event')
        this.register({ kind: 'event', id, resource, options, fn: fn as EventHandlerFn });
      else if (declaration.kind === 'timer')
        this.register({
          kind: 'timer',
          id,
          legacyIds,
          resource,
          options: options as TimerOptions,
          fn: fn as TimerHandlerFn,
        });
      else if (declaration.kind === 'daemon')
        this.register({
          kind: 'daemon',
          id,
          resource,
          options: options as DaemonOptions,
          fn: fn as DaemonHandlerFn,
        });
      else if (declaration.kind === 'owned')
        this.register(ownedSpec(id, resource, options as OwnedOptions, fn as OwnedHandlerFn));
      else if (declaration.kind === 'reconcile')
        this.register(
          reconcileSpec(id, resource, options as ReconcileOptions, fn as ReconcileHandlerFn),
        );
      else
        this.register({
          kind: declaration.kind,
          id,
          legacyIds,
          resource,
          options,
          fn: fn as ChangeHandlerFn,
        });
    }
    this.addCacheDeclarations(instance);
    // Activities (@on.startup, @on.cleanup, @on.probe).
    for (const spec of activitySpecsOf(instance)) this.addActivity(spec);
    // Admission webhooks (@on.validate, @on.mutate, @on.convert).
    for (const spec of admissionSpecsOf(instance)) this.registerAdmission(spec);
    for (const spec of conversionSpecsOf(instance)) this.registerConversion(spec);
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
  timer(
    resource: { apiVersion: string; name: string },
    fn: TimerHandlerFn,
    options: TimerOptions & { id: string },
  ): this {
    return this.register({ kind: 'timer', id: options.id, resource, options, fn });
  }

  /** Registers a daemon as a plain function. */
  daemon(
    resource: { apiVersion: string; name: string },
    fn: DaemonHandlerFn,
    options: DaemonOptions & { id: string },
  ): this {
    return this.register({ kind: 'daemon', id: options.id, resource, options, fn });
  }

  /**
   * Registers a reconcile handler as a plain function (see `on.reconcile`).
   * @example registry.reconcile({ apiVersion: 'example.com/v1', name: 'widgets' }, async ({ spec, patch }) => { ... }, { id: 'widgets', owns: [kinds.ConfigMap] })
   */
  reconcile(
    resource: { apiVersion: string; name: string },
    fn: ReconcileHandlerFn,
    options: ReconcileOptions & { id: string },
  ): this {
    return this.register(reconcileSpec(options.id, resource, options, fn));
  }

  /** Every registered handler, read by the operator and the CLI. @internal */
  get handlers(): readonly HandlerSpec[] {
    return this.specs;
  }

  // Read cache and indexes (@on.cache, @on.index).
  private readonly cacheSpecs: CacheSpec[] = [];
  private readonly indexSpecs: IndexSpec[] = [];

  /** Watches a resource for the cache alone (what `@on.cache` declares). */
  cache(spec: CacheSpec): this {
    this.cacheSpecs.push(spec);
    return this;
  }

  /** Registers an index (what `@on.index` declares); ids are unique per operator, as `ctx.indexes` finds them by id. */
  index(spec: IndexSpec): this {
    if (this.indexSpecs.some((s) => s.id === spec.id))
      throw new Error(`index id '${spec.id}' is registered twice; give one an explicit id`);
    this.indexSpecs.push(spec);
    return this;
  }

  /** Every resource watched for the cache alone. @internal */
  get caches(): readonly CacheSpec[] {
    return this.cacheSpecs;
  }

  /** Every registered index. @internal */
  get indexes(): readonly IndexSpec[] {
    return this.indexSpecs;
  }

  private addCacheDeclarations(instance: object): void {
    const cls = instance.constructor as HandlerClass;
    for (const spec of cacheDeclarationsOf(cls)) this.cache(spec);
    for (const { resource, options, method } of indexDeclarationsOf(cls)) {
      const fn = (instance as Record<string | symbol, unknown>)[method];
      if (typeof fn !== 'function')
        throw new Error(`${cls.name}.${String(method)} is not a method`);
      this.index({
        kind: 'index',
        id: options.id ?? `${cls.name}.${String(method)}`,
        resource,
        options,
        fn: (fn as IndexFn).bind(instance),
      });
    }
  }

  // Activities (lifecycle): operator-wide handlers with no resource, kept apart from `handlers`.
  private readonly activitySpecs: ActivitySpec[] = [];

  /**
   * Registers an activity handler as a plain function (`startup`, `cleanup` or `probe`); ids must be unique per activity.
   * @example registry.activity('startup', async ({ memo }) => { memo.pool = await connect(); }, { id: 'connect' })
   */
  activity(
    kind: ActivityKind,
    fn: ActivityFn,
    options: (StartupOptions | CleanupOptions | ProbeOptions) & { id: string },
  ): this {
    return this.addActivity({ kind, id: options.id, options, fn });
  }

  private addActivity(spec: ActivitySpec): this {
    checkActivityId(this.activitySpecs, spec);
    this.activitySpecs.push(spec);
    return this;
  }

  /** Every registered activity handler, in declaration order. @internal */
  get activities(): readonly ActivitySpec[] {
    return this.activitySpecs;
  }

  // Admission webhooks: served by the webhook server, never watched, kept apart from `handlers`.
  private readonly admissionSpecs: AdmissionSpec[] = [];
  private readonly conversionSpecs: ConversionSpec[] = [];

  /**
   * Registers a validating or mutating handler as a plain function; ids are unique per kind (they name the webhook path).
   * @example registry.registerAdmission({ kind: 'validate', id: 'widgets.size', resource: { apiVersion: 'example.com/v1', name: 'widgets' }, options: {}, fn })
   */
  registerAdmission(spec: AdmissionSpec): this {
    checkAdmissionOptions(spec.kind, spec.options);
    checkAdmissionId(this.admissionSpecs, spec);
    this.admissionSpecs.push(spec);
    return this;
  }

  /** Registers a CRD's conversion handler as a plain function; one per CRD. */
  registerConversion(spec: ConversionSpec): this {
    checkConversion(this.conversionSpecs, spec);
    this.conversionSpecs.push(spec);
    return this;
  }

  /** Every validating and mutating handler, in declaration order. @internal */
  admission(): readonly AdmissionSpec[] {
    return this.admissionSpecs;
  }

  /** Every conversion handler. @internal */
  conversions(): readonly ConversionSpec[] {
    return this.conversionSpecs;
  }
}

function hasAdmissionDeclarations(cls: HandlerClass): boolean {
  return admissionDeclarationsOf(cls).length > 0 || conversionDeclarationsOf(cls).length > 0;
}

function hasCacheDeclarations(cls: HandlerClass): boolean {
  return cacheDeclarationsOf(cls).length > 0 || indexDeclarationsOf(cls).length > 0;
}
