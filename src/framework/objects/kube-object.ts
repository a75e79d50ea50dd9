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
