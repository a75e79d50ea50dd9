import type { ApiClient } from './api-client.js';
import { withoutManagedFields } from './managed-fields.js';
import { objectPath, type Resource } from './resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import { isPlainObject } from '../objects/plain-object.js';

export const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';

/** One RFC 6902 operation. */
export interface JsonPatchOp {
  /** What to do at `path`; a failed `test` fails the whole patch (422). */
  op: 'add' | 'remove' | 'replace' | 'test';
  /** A JSON Pointer (RFC 6901): `/metadata/labels/app`, with `~1` for `/` in a key. */
  path: string;
  /** The value to add, replace with or test against; none for `remove`. */
  value?: unknown;
}

/**
 * Reads, merge-patches and JSON-patches one object of a resource; every PATCH carries its explicit
 * Content-Type. Answers come without `metadata.managedFields`, like watched objects.
 */
export class ObjectApi {
  constructor(
    /** The client the operator uses (shared credentials and connection pool). */
    readonly client: ApiClient,
    readonly resource: Resource,
  ) {}

  get(namespace: string | undefined, name: string): Promise<KubeObject> {
    return this.client
      .request<KubeObject>('GET', objectPath(this.resource, namespace, name))
      .then(withoutManagedFields);
  }

  /**
   * A JSON merge patch on the object, or on a subresource such as `status`. With `ifVersion`, it
   * lands only on the object at that `resourceVersion`; on a newer one the server answers 409.
   */
  mergePatch(
    namespace: string | undefined,
    name: string,
    body: Record<string, unknown>,
    subresource?: string,
    ifVersion?: string,
  ): Promise<KubeObject> {
    const fenced =
      ifVersion === undefined
        ? body
        : {
            ...body,
            metadata: {
              ...(isPlainObject(body.metadata) ? body.metadata : {}),
              resourceVersion: ifVersion,
            },
          };
    return this.client
      .request<KubeObject>('PATCH', objectPath(this.resource, namespace, name, subresource), {
        body: fenced,
        contentType: MERGE_PATCH,
      })
      .then(withoutManagedFields);
  }

  /** A JSON patch; a failed `test` operation answers 422. */
  jsonPatch(
    namespace: string | undefined,
    name: string,
    ops: readonly JsonPatchOp[],
  ): Promise<KubeObject> {
    return this.client
      .request<KubeObject>('PATCH', objectPath(this.resource, namespace, name), {
        body: ops,
        contentType: JSON_PATCH,
      })
      .then(withoutManagedFields);
  }
}
