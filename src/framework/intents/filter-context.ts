import type { Resource } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import { objectParts, type ObjectState } from './object-parts.js';
import type { ObjectOf, SpecOf, StatusOf, TypedObject } from './handler-specs.js';
import { defineMemo, ObjectMemos, type Memo } from './memo.js';

/**
 * What a `when` filter receives (Kopf's filter kwargs): the object, its parts, its resource, and its
 * memo. `when: (o) => o.spec.size > 1` and `when: (o) => o.metadata.labels?.tier === 'db'` read
 * the object as before; `when: ({ memo }) => 'lastName' in memo` reads what its handlers remembered.
 *
 * @example
 * ```ts
 * @timer('example.com/v1', 'widgets', { interval: 5, when: ({ memo }) => 'lastName' in memo })
 * greet({ memo }: TimerContext<Widget>) { console.log(`Hello, ${memo.lastName}!`); }
 * ```
 */
export interface FilterContext<T extends TypedObject = KubeObject> extends ObjectState<
  ObjectOf<T>,
  SpecOf<T>,
  StatusOf<T>
> {
  /** The object's memo (made on first read; see {@link Memo}). */
  memo: Memo;
  /** The resolved resource. */
  resource: Resource;
}

/** What filters are checked against besides the object: its resource, and the operator's memos. */
export interface FilterScope {
  resource: Resource;
  /** Unset: each check gets a memo of its own. */
  memos?: ObjectMemos;
}

/** A resource for filters checked without one (unit specs); the operator always gives the real one. */
const UNRESOLVED: Resource = {
  group: '',
  version: '',
  plural: '',
  kind: '',
  namespaced: true,
  hasStatus: false,
};

/** A scope of its own (a memo nobody else sees, an unresolved resource), for code run without an operator. */
export function detachedScope(): FilterScope {
  return { resource: UNRESOLVED, memos: new ObjectMemos() };
}

/** The context a `when` filter sees for one state of an object; without a scope, a memo of its own. */
export function filterContext(body: KubeObject, scope: FilterScope | undefined): FilterContext {
  const context = { ...objectParts(body), resource: scope?.resource ?? UNRESOLVED };
  return defineMemo(context, scope?.memos ?? new ObjectMemos(), context.uid);
}
