import type { KubeObject } from '../objects/kube-object.js';

/** The parts of one state of an object, named as every context (handler, `when` filter, index) names them. */
export interface ObjectParts {
  body: KubeObject;
  spec: Record<string, unknown>;
  status: Record<string, unknown> | undefined;
  metadata: NonNullable<KubeObject['metadata']>;
  name: string;
  namespace: string | undefined;
  uid: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

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
