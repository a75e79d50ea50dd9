import { resourceId, type Resource } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';

/** One collection the ring shares out: a handled resource in one namespace scope. */
export interface ShardedCollection {
  resource: Resource;
  /** undefined: every namespace (cluster-wide, or a cluster-scoped resource). */
  namespace?: string;
  /** With namespace globs: whether a namespace is served. */
  inScope?: (namespace: string) => boolean;
}

/** One key per collection: its resource and namespace. */
export function collectionKey(collection: ShardedCollection): string {
  return JSON.stringify([resourceId(collection.resource), collection.namespace ?? '']);
}

/** Whether an object listed or watched for a collection is one it serves (namespace globs). */
export function inCollection(collection: ShardedCollection, object: KubeObject): boolean {
  const namespace = object.metadata?.namespace;
  return (
    collection.inScope === undefined || namespace === undefined || collection.inScope(namespace)
  );
}
