import type { KubeObject } from './kube-object.js';

/** Carries a kind's object type; declared only, so nothing of it exists at run time. */
declare const OBJECT_TYPE: unique symbol;

/**
 * One resource as a value: its `apiVersion`, `kind` and plural, and (as a type only) the shape of its
 * objects. Pass it wherever a resource is named (`@on.create(Widget)`, `@on.reconcile(Widget, { owns:
 * [kinds.Pod] })`, `client.resource(kinds.Pod)`) and the object type flows to `body`, `spec`,
 * `status`, `patch`, `old`/`new` and the client's results. `konductor types` emits one per CRD
 * version; the built-in kinds are in `kinds`.
 */
export interface Kind<T = KubeObject> {
  /** `group/version`, or `v1` for the core group. */
  readonly apiVersion: string;
  /** The object kind, e.g. `Pod`. */
  readonly kind: string;
  /** The resource's plural, e.g. `pods`: what its API paths name. */
  readonly plural: string;
  /** Never set: it only carries the object type. */
  readonly [OBJECT_TYPE]?: T;
}

/** The object type a {@link Kind} carries. */
export type ObjectOfKind<K> = K extends Kind<infer T> ? T : never;

const PLURAL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const KIND = /^[A-Za-z][A-Za-z0-9]*$/;
const API_VERSION = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;

/**
 * Defines a kind: `defineKind<Widget>('example.com/v1', 'Widget', 'widgets')`. Throws when a part is
 * not what the API server accepts, so a typo fails when the module loads.
 */
export function defineKind<T = KubeObject>(
  apiVersion: string,
  kind: string,
  plural: string,
): Kind<T> {
  if (!API_VERSION.test(apiVersion))
    throw new Error(
      `defineKind: apiVersion ${JSON.stringify(apiVersion)} is not 'group/version' (or 'v1' for the core group)`,
    );
  if (!KIND.test(kind))
    throw new Error(
      `defineKind ${apiVersion}: kind ${JSON.stringify(kind)} must be a name such as 'Widget'`,
    );
  if (!PLURAL.test(plural))
    throw new Error(
      `defineKind ${apiVersion} ${kind}: plural ${JSON.stringify(plural)} must be lower-case, such as 'widgets'`,
    );
  return Object.freeze({ apiVersion, kind, plural });
}

/** Whether a value is a {@link Kind} rather than the first of two strings. */
export function isKind(value: unknown): value is Kind<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Kind).apiVersion === 'string' &&
    typeof (value as Kind).plural === 'string'
  );
}

/**
 * The resource a decorator or client call names, either as a kind (then `rest` holds what follows it)
 * or as two strings (`apiVersion`, `name`). Used by every entry point that takes both forms.
 */
export function resourceArguments(
  first: unknown,
  rest: readonly unknown[],
  what: string,
): { resource: { apiVersion: string; name: string }; rest: readonly unknown[] } {
  if (isKind(first))
    return { resource: { apiVersion: first.apiVersion, name: first.plural }, rest };
  if (typeof first === 'string' && typeof rest[0] === 'string')
    return { resource: { apiVersion: first, name: rest[0] }, rest: rest.slice(1) };
  throw new Error(
    `${what}: name the resource with a kind (${what}(Widget)) or with apiVersion and name (${what}('example.com/v1', 'widgets'))`,
  );
}

/**
 * The object type of a custom resource, from its spec and status types, for a kind defined by hand
 * (`konductor types` generates whole interfaces): `defineKind<CustomObject<WidgetSpec, WidgetStatus>>(...)`.
 */
export interface CustomObject<Spec = Record<string, unknown>, Status = Record<string, unknown>> {
  /** `group/version`. */
  apiVersion: string;
  /** The kind, as the CRD names it. */
  kind: string;
  /** The standard object metadata. */
  metadata: NonNullable<KubeObject['metadata']>;
  /** What the user asks for. */
  spec: Spec;
  /** What the operator reports; absent until first written. */
  status?: Status;
}
