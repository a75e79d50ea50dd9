/** The shape every Kubernetes object has; specific types extend it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
    creationTimestamp?: string;
    ownerReferences?: unknown[];
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

/**
 * The least an object type has: what the typed client and `adopt` read. Both the
 * framework's `KubeObject` and client-node's classes (`V1Pod`, `V1PersistentVolumeClaim`) are one.
 */
export interface ResourceObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    generateName?: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    ownerReferences?: readonly unknown[];
  };
}
