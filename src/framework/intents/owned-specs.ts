import type { ResourceSelector } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import { isKind, type Kind } from '../objects/kind.js';
import type {
  HandlerOptions,
  ObjectContext,
  SpecOf,
  StatusOf,
  TypedObject,
} from './handler-specs.js';
import type { Patch } from './patch.js';

/** What happened to a child, as its watch delivered it. */
export type OwnedEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One child's newest change in an owned run. */
export interface OwnedChange<Child extends TypedObject = KubeObject> {
  /** The child's newest event type. */
  event: OwnedEventType;
  /** The child's newest state as delivered (its last known state when `DELETED`). */
  child: Child;
}

/**
 * Options of `@on.owned`. `labels`, `annotations` and `when` filter the **owner**; `labelSelector` is
 * sent with the **child** watch. The owner has no server-side selector here: it is read from the
 * watch its resource already has.
 */
export interface OwnedOptions<Owner extends TypedObject = KubeObject> extends Omit<
  HandlerOptions<Owner>,
  'labelSelector' | 'fieldSelector'
> {
  /** The child resource: a kind (`kinds.ConfigMap`) or `[apiVersion, name]`, e.g. `['v1', 'configmaps']` (plural, kind, singular or short name). */
  child: Kind<unknown> | readonly [apiVersion: string, name: string];
  /** Sent to the API server with the child watch (e.g. `app=db`): other children are never seen. */
  labelSelector?: string;
}

/**
 * What an `@on.owned` handler receives: the owner's usual fields (its newest state), a `patch` of the
 * owner (written after the handler returns, in one merge PATCH, status on its subresource, as change
 * handlers' patches are), and the child changes that triggered the run.
 *
 * The first type argument is the owner (a whole object type, or its spec type as for `ObjectContext`),
 * the second the child's object type: `OwnedContext<Widget, ConfigMap>`.
 */
export interface OwnedContext<
  Owner = Record<string, unknown>,
  Child extends TypedObject = KubeObject,
> extends ObjectContext<Owner, StatusOf<Owner>> {
  /** Changes to the owner sent when the handler returns; `null` deletes a field. Not sent if the handler throws. */
  patch: Patch<SpecOf<Owner>, StatusOf<Owner>>;
  /** The child of the newest event of this run, in its newest state as delivered. */
  child: Child;
  /** What happened to `child`: its newest event type (`ADDED` also for children found by a listing). */
  event: OwnedEventType;
  /**
   * Every child change coalesced into this run, the newest per child uid, in the order they last
   * changed (so the last is `{ event, child }`). Holds more than one when several children changed
   * before the run could start.
   */
  changes: readonly OwnedChange<Child>[];
  /** Aborted on the operator's handler timeout or when the operator stops. */
  signal: AbortSignal;
}

/** An `@on.owned` handler function. */
export type OwnedHandlerFn<
  Owner = Record<string, unknown>,
  Child extends TypedObject = KubeObject,
> = (context: OwnedContext<Owner, Child>) => unknown;

/** A registered `@on.owned` handler: `resource` is the owner's, `child` the watched child resource. */
export interface OwnedSpec {
  /** Always `owned`. */
  kind: 'owned';
  /** Unique per owner resource. */
  id: string;
  /** The owner's resource. */
  resource: ResourceSelector;
  /** The child resource and the selector its watch sends. */
  child: {
    /** The child resource. */
    resource: ResourceSelector;
    /** Only children with matching labels are watched. */
    labelSelector?: string;
  };
  /** Filters on the owner only (no selectors: the owner is read from its resource's watch). */
  options: HandlerOptions;
  /** The handler. */
  fn: OwnedHandlerFn;
}

/** The spec of a declared `@on.owned` handler: the child and its selector taken out of the owner's options. */
export function ownedSpec(
  id: string,
  resource: ResourceSelector,
  options: OwnedOptions,
  fn: OwnedHandlerFn,
): OwnedSpec {
  const { child, labelSelector, ...ownerOptions } = options;
  let childResource: ResourceSelector;
  if (isKind(child)) childResource = { apiVersion: child.apiVersion, name: child.plural };
  else if (Array.isArray(child) && typeof child[0] === 'string' && typeof child[1] === 'string')
    childResource = { apiVersion: child[0], name: child[1] };
  else
    throw new Error(
      `@on.owned ${id}: options.child must be a kind or [apiVersion, name] of the child resource, e.g. kinds.ConfigMap or ['v1', 'configmaps']`,
    );
  return {
    kind: 'owned',
    id,
    resource,
    child: { resource: childResource, labelSelector: labelSelector || undefined },
    options: ownerOptions,
    fn,
  };
}
