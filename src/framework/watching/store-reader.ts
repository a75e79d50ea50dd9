import type { KubeObject } from '../objects/kube-object.js';
import { labelSelectorMatcher } from './label-selector.js';
import type { ObjectStore } from './object-store.js';

/** One watch's store and the namespace it covers (undefined: every namespace). */
export interface ScopedStore {
  namespace: string | undefined;
  store: ObjectStore;
}

/** Which objects a read may see: whether a namespace is one the operator serves (tenant isolation). */
export type NamespaceGate = (namespace: string) => boolean;

/** Which objects a list returns. */
export interface ListQuery {
  /** One namespace; every namespace the operator serves when omitted. */
  namespace?: string;
  /** `app=db,tier!=cache,env in (a,b)`, applied to the cached objects. */
  labelSelector?: string;
}

/**
 * The object named `name` in `namespace` from the first store covering that namespace that holds it;
 * undefined when none does, or the namespace is not one the operator serves. No copy: the store's own object.
 */
export function readObject(
  stores: readonly ScopedStore[],
  namespace: string | undefined,
  name: string,
  gate: NamespaceGate,
): KubeObject | undefined {
  const ns = namespace ?? '';
  if (ns !== '' && !gate(ns)) return undefined;
  for (const { namespace: scope, store } of stores) {
    if (scope !== undefined && scope !== ns) continue;
    const object = store.named(ns, name);
    if (object) return object;
  }
  return undefined;
}

/**
 * The objects of every store covering the query's namespace, each once (stores of one resource may
 * overlap: several selectors), in namespaces the operator serves, matching the label selector.
 * Throws on a label selector it cannot read.
 */
export function listObjects(
  stores: readonly ScopedStore[],
  query: ListQuery,
  gate: NamespaceGate,
): KubeObject[] {
  const matches = query.labelSelector ? labelSelectorMatcher(query.labelSelector) : undefined;
  if (query.namespace !== undefined && query.namespace !== '' && !gate(query.namespace)) return [];
  const seen = new Set<string>();
  const found: KubeObject[] = [];
  const admitted = new Map<string, boolean>(); // namespaces are few: each passes the gate once
  for (const { namespace: scope, store } of stores) {
    if (query.namespace !== undefined && scope !== undefined && scope !== query.namespace) continue;
    const objects =
      query.namespace !== undefined ? store.inNamespace(query.namespace) : store.values();
    for (const object of objects) {
      const uid = object.metadata?.uid ?? '';
      if (stores.length > 1 && seen.has(uid)) continue;
      const ns = object.metadata?.namespace ?? '';
      let allowed = admitted.get(ns);
      if (allowed === undefined) admitted.set(ns, (allowed = ns === '' || gate(ns)));
      if (!allowed || (matches && !matches(object.metadata?.labels))) continue;
      if (stores.length > 1) seen.add(uid);
      found.push(object);
    }
  }
  return found;
}
