import type { KubeObject } from '../objects/kube-object.js';

/**
 * One state of an object and its parts, named as every context (handler, `when` filter, index) names
 * them; each context types `body`, `spec` and `status` from its resource's type.
 */
export interface ObjectState<
  Body = KubeObject,
  Spec = Record<string, unknown>,
  Status = Record<string, unknown>,
> {
  /** The whole object, read-only. */
  body: Body;
  /** `body.spec`, or `{}` when the object has none. */
  spec: Spec;
  /** `body.status`, if any. */
  status: Status | undefined;
  /** `body.metadata`, or `{}`. */
  metadata: NonNullable<KubeObject['metadata']>;
  /** `metadata.name`, or `''`. */
  name: string;
  /** `metadata.namespace`; undefined for a cluster-scoped object. */
  namespace: string | undefined;
  /** `metadata.uid`, or `''`. */
  uid: string;
  /** `metadata.labels`, or `{}`. */
  labels: Record<string, string>;
  /** `metadata.annotations`, or `{}`. */
  annotations: Record<string, string>;
}

/** The untyped {@link ObjectState}, as read from any object. */
export type ObjectParts = ObjectState;

/** {@link ObjectParts} of `body`, read once, so the contexts built from it cannot drift apart. */
export function objectParts(body: KubeObject): ObjectParts {
  const meta = body.metadata ?? {};
  return {
    body,
    spec: (body.spec ?? {}) as Record<string, unknown>,
    status: body.status as Record<string, unknown> | undefined,
    metadata: meta,
    name: meta.name ?? '',
    namespace: meta.namespace,
    uid: meta.uid ?? '',
    labels: meta.labels ?? {},
    annotations: meta.annotations ?? {},
  };
}
