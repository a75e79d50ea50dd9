import '../registry/metadata.js';
import { declareHandler } from './declare-handler.js';
import { reconcile } from './reconcile.js';
import type {
  ChangeHandlerOptions,
  HandlerDeclaration,
  HandlerOptions,
} from '../intents/handler-specs.js';
import { resourceArguments } from '../objects/kind.js';
import type { OwnedOptions } from '../intents/owned-specs.js';
import { cacheDecorator, indexDecorator } from './cache.js';
import { activity, type ActivityDecorator } from './activities.js';
import type { CleanupOptions, ProbeOptions, StartupOptions } from '../intents/activity-specs.js';
import { admission, conversion, type ConvertDecorator } from './admission.js';
import type { AdmissionOptions } from '../intents/admission-specs.js';

export { declareHandler };
export type {
  ChangeDecorator,
  ChangeDecoratorFactory,
  UpdateDecoratorFactory,
  FieldDecoratorFactory,
  EventDecoratorFactory,
  EventDecorator,
  OwnedDecorator,
  OwnedDecoratorFactory,
  AdmissionDecoratorFactory,
} from './decorator-types.js';
import type {
  ChangeDecoratorFactory,
  UpdateDecoratorFactory,
  FieldDecoratorFactory,
  EventDecoratorFactory,
  OwnedDecoratorFactory,
  AdmissionDecoratorFactory,
} from './decorator-types.js';

function changeFactory(
  kind: HandlerDeclaration['kind'],
): (
  first: unknown,
  ...rest: unknown[]
) => (method: unknown, context: ClassMethodDecoratorContext) => void {
  return (first, ...rest) => {
    const {
      resource,
      rest: [options],
    } = resourceArguments(first, rest, `@on.${kind}`);
    return (_method, context) =>
      declareHandler(context, { kind, resource, options: (options ?? {}) as ChangeHandlerOptions });
  };
}

/**
 * Decorators that register class methods as handlers. Resources are named by `group/version`
 * (`v1` for core) plus plural, kind, singular or short name.
 *
 * @example
 * ```ts
 * import { on, PermanentError, type ChangeContext } from 'konductor';
 * class Widgets {
 *   @on.create('example.com/v1', 'widgets')
 *   async created({ patch }: ChangeContext) { patch.status.phase = 'Ready'; }
 *
 *   @on.field('example.com/v1', 'widgets', 'spec.size')
 *   async resized({ new: size }: ChangeContext) { if (Number(size) > 9) throw new PermanentError('size must be <= 9'); }
 * }
 * ```
 */
export const on = {
  /**
   * Runs for every raw watch event (ADDED, MODIFIED, DELETED) of the resource, in order, one at a
   * time per object. Errors are logged and ignored: no retries, no progress record. `field` (with
   * `value`, default `PRESENT`) runs it only for events whose object has a matching value there.
   */
  event: ((first: unknown, ...rest: unknown[]) => {
    const {
      resource,
      rest: [options],
    } = resourceArguments(first, rest, '@on.event');
    return (_method: unknown, context: ClassMethodDecoratorContext): void =>
      declareHandler(context, {
        kind: 'event',
        resource,
        options: (options ?? {}) as HandlerOptions,
      });
  }) as EventDecoratorFactory,

  /** Runs once when an object is first seen with no record of having been handled. */
  create: changeFactory('create') as ChangeDecoratorFactory,

  /** Runs when the object's essence (spec, labels, annotations; or one `field`) changed since it was last handled. */
  update: changeFactory('update') as UpdateDecoratorFactory,

  /** Runs when one field (`spec.size`, or `status.phase`) changed; `old`/`new`/`diff` are narrowed to it. */
  field: ((first: unknown, ...rest: unknown[]) => {
    const {
      resource,
      rest: [field, options],
    } = resourceArguments(first, rest, '@on.field');
    if (typeof field !== 'string' || field === '')
      throw new Error(`@on.field ${resource.name}: the field path (e.g. 'spec.size') is missing`);
    return (_method: unknown, context: ClassMethodDecoratorContext): void =>
      declareHandler(context, {
        kind: 'update',
        resource,
        options: { ...((options ?? {}) as ChangeHandlerOptions), field },
      });
  }) as FieldDecoratorFactory,

  /**
   * Runs when the object is being deleted. Unless `optional`, a finalizer holds the object until every
   * delete handler has finished. (Kopf's `on.delete` is not offered: `delete` after a dot in a
   * decorator is a syntax error in esbuild, and so in tsx and `konductor run`.)
   */
  deletion: changeFactory('delete') as ChangeDecoratorFactory,

  /**
   * Runs for objects that exist when the operator starts, and for handled objects that arrive in its
   * watch later (moved to this replica's shard, or newly matching its selector), so a replica can rebuild
   * what it keeps in memory about them; alongside updates to them on first sight.
   */
  resume: changeFactory('resume') as ChangeDecoratorFactory,

  /**
   * Level-triggered reconcile (controller-runtime's `Reconcile`, kube-rs's `Controller`): one method
   * that makes the world match the object's current state, called whenever the object changes, a
   * child it `owns` (by controller owner reference) changes, a `watches` map function names it, on
   * resume, and when a run asks to run again (it returns a delay, or `requeueAfter` is set). Never
   * twice at once for one object; changes during a run make one more run; runs of one object start
   * at least `minInterval` (0.2 s) apart. Its own writes wake nothing. A `TemporaryError` is retried
   * after its delay, a `PermanentError` waits for the next change, anything else is retried after
   * 1 s doubling to 60 s. `ctx.patch` and `ctx.conditions` go out in one merge PATCH with
   * `status.observedGeneration`. A deleted object gets one last run with `ctx.deleting` while the
   * finalizer holds it (none with `finalizer: false`). One per resource; it sits beside cause handlers.
   *
   * @example
   * ```ts
   * @on.reconcile(Widget, { owns: [kinds.ConfigMap] })
   * async reconcile({ name, namespace, spec, body, client, conditions }: ReconcileContext<Widget>) {
   *   await client.resource(kinds.ConfigMap).apply(adopt({ metadata: { name, namespace }, data: { size: String(spec.size) } }, body));
   *   conditions.set('Ready', true);
   * }
   * ```
   */
  reconcile,

  /**
   * Runs on the owner when one of its children changes: controller-runtime's `Owns()`. The child
   * resource (`options.child`) is watched in the operator's namespaces (sharing a watch other handlers
   * of it already have; `options.labelSelector` goes with it). A child event reaches the owner its
   * ownerReference with `controller: true` names, when that reference's API group and kind are the
   * owner resource's and the owner is in the child's namespace (or cluster-scoped); other references
   * are ignored. The owner is read from its own watch (no API call): an owner not listed yet, gone, or
   * being deleted is skipped, as are owners failing `labels`/`annotations`/`when`.
   *
   * Runs are serialized with the owner's other handlers (the same per-object queue) and coalesced per
   * owner: child events arriving before the run starts make one run, which sees the newest change of
   * each child in `ctx.changes` and the newest of all as `ctx.child`/`ctx.event`. The initial listing
   * of the children counts as `ADDED` events (one run per owner that has children); after a lost
   * watch, a relist delivers only the children that changed meanwhile.
   * `ctx.patch` is the owner's, written after the handler returns in one merge PATCH (status on its
   * subresource) like change handlers' patches. A failed handler is logged with the owner's
   * namespace/name and the handler id, its patch is not sent, and the owner runs it again after 1 s,
   * doubling up to 60 s (a `TemporaryError`'s `delay` when given; a `PermanentError` is not retried),
   * with the failed run's child changes merged with any newer ones. A failed write of the patch is
   * retried the same way.
   *
   * @example
   * ```ts
   * class Widgets {
   *   @on.owned('example.com/v1', 'widgets', { child: ['v1', 'configmaps'] })
   *   async configChanged({ child, event, patch }: OwnedContext<Widget, ConfigMap>) {
   *     patch.status.config = event === 'DELETED' ? null : child.metadata?.resourceVersion;
   *   }
   * }
   * ```
   */
  owned: ((first: unknown, ...rest: unknown[]) => {
    const {
      resource,
      rest: [options],
    } = resourceArguments(first, rest, '@on.owned');
    return (_method: unknown, context: ClassMethodDecoratorContext): void =>
      declareHandler(context, { kind: 'owned', resource, options: options as OwnedOptions });
  }) as OwnedDecoratorFactory,

  /**
   * A CLASS decorator: watches a resource for `ctx.cache` alone (no handler runs for it), in the
   * operator's namespaces. Handlers start once its initial listing is in, and `ready` waits for it.
   * Every resource a handler watches is readable without it.
   *
   * @example
   * ```ts
   * @on.cache('v1', 'secrets', { labelSelector: 'app=widgets' })
   * class Widgets {
   *   @on.create('example.com/v1', 'widgets')
   *   async created({ cache, namespace }: ChangeContext) {
   *     const secret = cache.resource<Secret>('v1', 'secrets').get({ namespace, name: 'credentials' });
   *   }
   * }
   * ```
   */
  cache: cacheDecorator,

  /**
   * An index (Kopf's `@kopf.index`, dict form): the method returns each object's values by key (or
   * undefined), recomputed on every event of the object and dropped when it is deleted. Handlers read
   * `ctx.indexes.get<V>(id)` (id: `Class.method` unless given): every value under a key, one per
   * object. Handlers start once every index has its initial listing; `ready` waits too. A function
   * that throws is logged once per object, which then contributes nothing.
   *
   * @example
   * ```ts
   * class Pods {
   *   @on.index('v1', 'pods')
   *   byApp({ labels, name }: IndexContext) { return labels.app ? { [labels.app]: name } : undefined; }
   *
   *   @on.create('example.com/v1', 'widgets')
   *   async created({ indexes, name }: ChangeContext) { indexes.get<string>('Pods.byApp').get(name); }
   * }
   * ```
   */
  index: indexDecorator,
  // Activities (lifecycle): operator-wide handlers with no object.

  /**
   * Runs once when the operator starts, before anything is watched (and before a leader election
   * campaign), in declaration order; the operator waits for all of them. Errors are retried after
   * `backoff`; a `PermanentError`, used-up `retries` or `timeout` stops the start: `ready` rejects
   * and `konductor run` exits with code 1, naming the handler.
   * @example
   * ```ts
   * @on.startup({ retries: 5 })
   * async connect({ memo }: ActivityContext) { memo.db = await openDatabase(); }
   * ```
   */
  startup(options: StartupOptions = {}): ActivityDecorator {
    return activity('startup', options);
  },

  /**
   * Runs once on `stop()` (SIGTERM, SIGINT), after in-flight handlers are drained and before the
   * Lease is released, in declaration order, if every startup handler had succeeded. Errors are
   * logged; it never holds the stop past its deadline.
   */
  cleanup(options: CleanupOptions = {}): ActivityDecorator {
    return activity('cleanup', options);
  },

  /**
   * Runs on requests to `/healthz` (at most once per 10 s; results are cached in between), after
   * startup: its return value is shown in `/healthz`'s JSON under `probes.<id>`. A probe that throws
   * or runs past its `timeout` (default 5 s) is shown as `{ "error": message }` and fails `/healthz`
   * (503), so throw only for what a restart of the operator would fix.
   */
  probe(options: ProbeOptions = {}): ActivityDecorator {
    return activity('probe', options);
  },

  // Admission webhooks: @on.validate, @on.mutate, @on.convert.
  /**
   * A validating admission webhook: the API server asks it before storing an object (by default on
   * CREATE and UPDATE). Throw `AdmissionError(message, { code })` to refuse (any other error refuses
   * as a 500); push to `ctx.warnings` or return strings to warn. Objects failing `labels`,
   * `annotations`, `when` or `field`/`value` are admitted without running it. Each handler is its own
   * webhook (own path, `failurePolicy`, `timeoutSeconds`).
   * @example
   * ```ts
   * @on.validate('example.com/v1', 'widgets', { operations: ['CREATE', 'UPDATE'] })
   * check({ spec }: AdmissionContext<Widget>) { if (spec.size > 9) throw new AdmissionError('spec.size must be at most 9'); }
   * ```
   */
  validate: ((first: unknown, ...rest: unknown[]) => {
    const {
      resource,
      rest: [options],
    } = resourceArguments(first, rest, '@on.validate');
    return admission(
      'validate',
      resource.apiVersion,
      resource.name,
      (options ?? {}) as AdmissionOptions,
    );
  }) as AdmissionDecoratorFactory<'validate'>,

  /**
   * A mutating admission webhook: edit `ctx.patch` (the merge patch change handlers use) and the
   * object is stored with the change (answered as a JSON patch). Refuses as {@link on.validate} does.
   * @example
   * ```ts
   * @on.mutate('example.com/v1', 'widgets')
   * defaults({ spec, patch }: MutationContext<Widget>) { if (spec.size === undefined) patch.spec.size = 1; }
   * ```
   */
  mutate: ((first: unknown, ...rest: unknown[]) => {
    const {
      resource,
      rest: [options],
    } = resourceArguments(first, rest, '@on.mutate');
    return admission(
      'mutate',
      resource.apiVersion,
      resource.name,
      (options ?? {}) as AdmissionOptions,
    );
  }) as AdmissionDecoratorFactory<'mutate'>,

  /**
   * The conversion webhook of a CRD with several versions (`group`, plural `name`): returns the object
   * at `ctx.toVersion` (the framework sets its `apiVersion`). Objects already at the desired version
   * are not passed to it. One per CRD.
   * @example
   * ```ts
   * @on.convert('example.com', 'widgets')
   * convert({ object, toVersion }: ConversionContext) {
   *   const spec = object.spec as { size?: number; replicas?: number };
   *   return toVersion === 'example.com/v2' ? { ...object, spec: { replicas: spec.size } } : { ...object, spec: { size: spec.replicas } };
   * }
   * ```
   */
  convert(group: string, name: string): ConvertDecorator {
    return conversion(group, name);
  },
};
