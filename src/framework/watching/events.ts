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

/** A change to one object, as seen by a watch. `fromList` marks objects that came from a (re)listing. */
export interface ObjectEvent<T extends KubeObject = KubeObject> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: T;
  fromList: boolean;
}

/** Emitted when a listing (initial or after 410 Gone) has been delivered completely. */
export interface SyncedEvent {
  type: 'SYNCED';
}

/** What a watch stream emits. */
export type WatchEvent<T extends KubeObject = KubeObject> = ObjectEvent<T> | SyncedEvent;
