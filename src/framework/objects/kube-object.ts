/** The shape every Kubernetes object has; specific types extend it. */
export interface KubeObject {
  /** `group/version`, or `v1` for the core group. */
  apiVersion?: string;
  /** The object's kind, such as `Pod`. */
  kind?: string;
  /** The standard object metadata; other fields are kept as the server sent them. */
  metadata?: {
    /** Unique per namespace (per cluster, for cluster-scoped objects). */
    name?: string;
    /** Undefined for cluster-scoped objects. */
    namespace?: string;
    /** Set by the server; a new object of the same name gets a new one. */
    uid?: string;
    /** Changes on every write; a write that carries an older one fails with 409. */
    resourceVersion?: string;
    /** Increases when the spec changes (not on status or metadata writes). */
    generation?: number;
    /** Selected on by label selectors. */
    labels?: Record<string, string>;
    /** Free-form data, not selectable. */
    annotations?: Record<string, string>;
    /** Keys that hold a deleted object until each is removed. */
    finalizers?: string[];
    /** Set (RFC 3339) once deletion was asked for while finalizers remain. */
    deletionTimestamp?: string;
    /** When the object was created (RFC 3339). */
    creationTimestamp?: string;
    /** The objects this one belongs to; garbage collection deletes it after them. */
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
  /** `group/version`, or `v1` for the core group. */
  apiVersion?: string;
  /** The object's kind. */
  kind?: string;
  /** What the client reads of the metadata. */
  metadata?: {
    /** The object's name. */
    name?: string;
    /** A prefix the server completes into a unique name, on create. */
    generateName?: string;
    /** The object's namespace. */
    namespace?: string;
    /** The object's uid. */
    uid?: string;
    /** The object's labels. */
    labels?: Record<string, string>;
    /** The objects this one belongs to. */
    ownerReferences?: readonly unknown[];
  };
}
