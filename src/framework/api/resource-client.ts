import type { ApiClient, Query } from './api-client.js';
import { ApiError } from './api-error.js';
import { discoverResource } from './discovery.js';
import { withoutManagedFields } from './managed-fields.js';
import { JSON_PATCH, MERGE_PATCH, type JsonPatchOp } from './object-api.js';
import {
  checkedName,
  checkedNamespace,
  checkedSubresource,
  selectorString,
  type ObjectRef,
} from './object-ref.js';
import { apiVersionOf, collectionPath, objectPath, type Resource } from './resource.js';
import type { KubeObject, ResourceObject } from '../objects/kube-object.js';
import type { DeepPartial, MergePatch } from '../objects/merge-patch.js';

export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';
/** Server-side apply; JSON is YAML, so the body is sent as JSON. */
export const APPLY_PATCH = 'application/apply-patch+yaml';
/** The field manager of a server-side apply when the client names none (the default identity's). */
const DEFAULT_FIELD_MANAGER = 'konductor';
/** The page size of {@link ResourceClient.listAll} unless one is given. */
const DEFAULT_PAGE = 500;

export type { ResourceObject };

/** A merge patch of `T`'s `status`. */
export type StatusPatch<T> = T extends {
  /** The object's status. */
  status?: infer S;
}
  ? MergePatch<NonNullable<S>>
  : Record<string, unknown>;

/** What {@link ResourceClient.apply} sends: the fields this operator manages, with the object's name. */
export type ApplyObject<T> = DeepPartial<T> & {
  /** Names the object; other metadata fields are applied like any other field. */
  metadata: {
    /** Required. */
    name: string;
    /** For namespaced resources. */
    namespace?: string;
  };
};

/** Options of the writes that can be tried without persisting. */
export interface WriteOptions {
  /** Validate and answer what would be stored, without storing it (`dryRun=All`). */
  dryRun?: boolean;
}

/** Which objects a list returns, and how many at a time. */
export interface ListOptions {
  /** One namespace; all namespaces when left out (namespaced resources). */
  namespace?: string;
  /** `app=web,tier!=db`, or `{ app: 'web' }` for equality on each label. */
  labelSelector?: string | Readonly<Record<string, string>>;
  /** `metadata.name=web`, `status.phase=Running`. */
  fieldSelector?: string;
  /** At most this many items; the answer's `continue` fetches the next page. */
  limit?: number;
  /** The `continue` token of the previous page. */
  continue?: string;
}

/** One page of a list: items carry `apiVersion` and `kind` (the API server leaves them out of list items). */
export interface ListResult<T> {
  /** The objects of this page. */
  items: T[];
  /** Present when more items remain: pass it as `continue`. */
  continue?: string;
  /** The collection's version when listed: a watch from it misses no change. */
  resourceVersion: string;
}

/** Options of a merge or strategic merge patch. */
export interface PatchOptions extends WriteOptions {
  /** `merge` (JSON merge patch, the default) or `strategic` (built-in kinds only: lists merge by key). */
  type?: 'merge' | 'strategic';
  /** A subresource such as `status` or `scale`. */
  subresource?: string;
}

/** Options of a JSON patch (RFC 6902). */
export interface JsonPatchOptions extends WriteOptions {
  /** RFC 6902 operations; a failed `test` answers 422. */
  type: 'json';
  /** A subresource such as `status` or `scale`. */
  subresource?: string;
}

/** Options of a server-side apply. */
export interface ApplyOptions extends WriteOptions {
  /** Take over fields another manager owns instead of failing with 409. */
  force?: boolean;
  /** A subresource such as `status`. */
  subresource?: string;
}

/** Options of a delete. */
export interface DeleteOptions extends WriteOptions {
  /** `Foreground` (dependents first), `Background` (the default for most kinds) or `Orphan`. */
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  /** Delete only this incarnation (`uid`) or version; otherwise the server answers 409. */
  preconditions?: {
    /** The incarnation to delete: a newer object of the same name is kept. */
    uid?: string;
    /** The version to delete: a changed object is kept. */
    resourceVersion?: string;
  };
  /** Seconds before a forced deletion (pods); 0 deletes at once. */
  gracePeriodSeconds?: number;
}

/** Discovery answers per client, shared by every `resource()` of it; a failed one is forgotten. */
const resolutions = new WeakMap<ApiClient, Map<string, Promise<Resource>>>();

function resolveOnce(client: ApiClient, apiVersion: string, name: string): Promise<Resource> {
  let cache = resolutions.get(client);
  if (!cache) resolutions.set(client, (cache = new Map()));
  const key = `${apiVersion} ${name.toLowerCase()}`;
  let resolution = cache.get(key);
  if (!resolution) {
    resolution = discoverResource(client, { apiVersion, name });
    cache.set(key, resolution);
    // Forgotten on failure: the CRD may be installed later, or the server was briefly away.
    resolution.catch(() => cache.delete(key));
  }
  return resolution;
}

/**
 * A typed client for one resource, from {@link ApiClient.resource}. The resource is named by plural,
 * kind, singular or short name and resolved by discovery on first use (once per client). Names and
 * namespaces are checked and every path segment encoded before a request is made; answers come
 * without `metadata.managedFields`. Failures throw {@link ApiError} (`ApiError.isNotFound(error)`…).
 *
 * @example
 * ```ts
 * const pvcs = ctx.client.resource<V1PersistentVolumeClaim>('v1', 'persistentvolumeclaims');
 * const pvc = await pvcs.find({ namespace, name });          // undefined when absent
 * await pvcs.patch({ namespace, name }, { metadata: { labels: { tier: 'gold' } } });
 * for await (const item of pvcs.listAll({ namespace, labelSelector: { app: 'web' } })) ctx.logger.info(item.metadata?.name);
 * ```
 */
export class ResourceClient<T extends ResourceObject = KubeObject> {
  constructor(
    /** The client requests go through (its credentials, connection pool and field manager). */
    readonly client: ApiClient,
    /** `v1`, or `group/version`. */
    readonly apiVersion: string,
    /** As given: plural, kind, singular or short name. */
    readonly name: string,
  ) {}

  /** The resource as discovery resolved it (once per client; retried after a failure). */
  resolve(): Promise<Resource> {
    return resolveOnce(this.client, this.apiVersion, this.name);
  }

  /** The object; throws {@link ApiError} (`isNotFound`) when it does not exist. */
  async get(ref: ObjectRef): Promise<T> {
    return withoutManagedFields(await this.request<T & KubeObject>('GET', ref, 'get'));
  }

  /** The object, or undefined when it does not exist. */
  async find(ref: ObjectRef): Promise<T | undefined> {
    try {
      return await this.get(ref);
    } catch (error) {
      if (ApiError.isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** One page of objects, in a namespace or across all, filtered by label and field selectors. */
  async list(options: ListOptions = {}): Promise<ListResult<T>> {
    const what = this.what('list');
    checkedNamespace(options.namespace, true, what, true);
    if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit > 0))
      throw new Error(`${what}: limit must be a positive integer`);
    const resource = await this.resolve();
    const namespace = checkedNamespace(options.namespace, resource.namespaced, what, true);
    const query: Query = {
      labelSelector: selectorString(options.labelSelector),
      fieldSelector: options.fieldSelector,
      limit: options.limit,
      continue: options.continue,
    };
    const answer = await this.client.request<{
      metadata?: { continue?: string; resourceVersion?: string };
      items?: KubeObject[];
    }>('GET', collectionPath(resource, namespace), { query });
    const apiVersion = apiVersionOf(resource);
    const items = (answer.items ?? []).map(
      (item) =>
        ({ apiVersion, kind: resource.kind, ...withoutManagedFields(item) }) as unknown as T,
    );
    return {
      items,
      continue: answer.metadata?.continue || undefined,
      resourceVersion: answer.metadata?.resourceVersion ?? '',
    };
  }

  /**
   * Every matching object, page by page (`limit` per request, default 500), following `continue`.
   * A page token that expired while iterating throws {@link ApiError} (`isGone`): list again.
   */
  async *listAll(options: Omit<ListOptions, 'continue'> = {}): AsyncGenerator<T, void, undefined> {
    let token: string | undefined;
    do {
      const page = await this.list({
        ...options,
        limit: options.limit ?? DEFAULT_PAGE,
        continue: token,
      });
      yield* page.items;
      token = page.continue;
    } while (token !== undefined);
  }

  /** Creates the object in `object.metadata.namespace` (or cluster-wide); the name is checked unless `generateName` is used. */
  async create(object: T, options: WriteOptions = {}): Promise<T> {
    const what = this.what('create', object.metadata);
    const meta = object.metadata ?? {};
    if (meta.name !== undefined || meta.generateName === undefined) checkedName(meta.name, what);
    checkedNamespace(meta.namespace, true, what, true);
    const resource = await this.resolve();
    const namespace = checkedNamespace(meta.namespace, resource.namespaced, what);
    const answer = await this.client.request<T & KubeObject>(
      'POST',
      collectionPath(resource, namespace),
      { body: object, query: dryRun(options) },
    );
    return withoutManagedFields(answer);
  }

  /**
   * Patches the object: a JSON merge patch by default (`null` deletes a field), a strategic merge
   * patch (`type: 'strategic'`, built-in kinds), or RFC 6902 operations (`type: 'json'`).
   *
   * @example
   * ```ts
   * await pods.patch(pod.metadata, { metadata: { labels: { stale: null } } });
   * await pods.patch(pod.metadata, [{ op: 'test', path: '/metadata/resourceVersion', value: rv }, { op: 'remove', path: '/metadata/labels/stale' }], { type: 'json' });
   * ```
   */
  patch(ref: ObjectRef, body: MergePatch<T>, options?: PatchOptions): Promise<T>;
  patch(ref: ObjectRef, body: readonly JsonPatchOp[], options: JsonPatchOptions): Promise<T>;
  async patch(
    ref: ObjectRef,
    body: MergePatch<T> | readonly JsonPatchOp[],
    options: PatchOptions | JsonPatchOptions = {},
  ): Promise<T> {
    const type = options.type ?? 'merge';
    const contentType =
      type === 'json' ? JSON_PATCH : type === 'strategic' ? STRATEGIC_MERGE_PATCH : MERGE_PATCH;
    return withoutManagedFields(
      await this.request<T & KubeObject>(
        'PATCH',
        ref,
        'patch',
        { body, contentType, query: dryRun(options) },
        options.subresource,
      ),
    );
  }

  /**
   * Server-side apply: sends the fields this operator manages, under the client's field manager
   * (the operator's identity). A field another manager owns answers 409 unless `force`.
   * `apiVersion` and `kind` are filled in from discovery when left out.
   *
   * @example
   * ```ts
   * await configMaps.apply({ metadata: { name: 'settings', namespace }, data: { mode: 'fast' } }, { force: true });
   * ```
   */
  async apply(object: ApplyObject<T>, options: ApplyOptions = {}): Promise<T> {
    const resource = await this.resolve();
    const body = { apiVersion: apiVersionOf(resource), kind: resource.kind, ...object };
    const query: Query = {
      ...dryRun(options),
      fieldManager: this.client.fieldManager ?? DEFAULT_FIELD_MANAGER,
      force: options.force ? true : undefined,
    };
    return withoutManagedFields(
      await this.request<T & KubeObject>(
        'PATCH',
        object.metadata,
        'apply',
        { body, contentType: APPLY_PATCH, query },
        options.subresource,
      ),
    );
  }

  /**
   * Deletes the object; true when the server accepted the deletion (finalizers may still hold it),
   * false when it was already gone. A failed precondition throws {@link ApiError} (`isConflict`).
   */
  async delete(ref: ObjectRef, options: DeleteOptions = {}): Promise<boolean> {
    const what = this.what('delete');
    const grace = options.gracePeriodSeconds;
    if (grace !== undefined && !(Number.isInteger(grace) && grace >= 0))
      throw new Error(`${what}: gracePeriodSeconds must be a whole number of seconds, 0 or more`);
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: options.propagationPolicy,
      preconditions: options.preconditions,
      gracePeriodSeconds: grace,
    };
    try {
      await this.request<unknown>('DELETE', ref, 'delete', { body, query: dryRun(options) });
      return true;
    } catch (error) {
      if (ApiError.isNotFound(error)) return false;
      throw error;
    }
  }

  /**
   * Merge-patches the object's `status`: on the status subresource when the resource has one,
   * otherwise on the object itself (where status is an ordinary field).
   */
  async patchStatus(
    ref: ObjectRef,
    status: StatusPatch<T>,
    options: WriteOptions = {},
  ): Promise<T> {
    const resource = await this.resolve();
    const body = { status };
    return withoutManagedFields(
      await this.request<T & KubeObject>(
        'PATCH',
        ref,
        'patchStatus',
        { body, contentType: MERGE_PATCH, query: dryRun(options) },
        resource.hasStatus ? 'status' : undefined,
      ),
    );
  }

  /**
   * Replaces the object's status (PUT on the status subresource) with `object.status`; its
   * `metadata.resourceVersion`, when given, makes a concurrent change answer 409. Without a status
   * subresource this replaces the whole object.
   */
  async replaceStatus(object: T, options: WriteOptions = {}): Promise<T> {
    const resource = await this.resolve();
    return withoutManagedFields(
      await this.request<T & KubeObject>(
        'PUT',
        object.metadata ?? {},
        'replaceStatus',
        { body: object, query: dryRun(options) },
        resource.hasStatus ? 'status' : undefined,
      ),
    );
  }

  /** One request about one object, its name, namespace and subresource checked first. */
  private async request<R>(
    method: string,
    ref: ObjectRef,
    verb: string,
    init: { body?: unknown; contentType?: string; query?: Query } = {},
    subresource?: string,
  ): Promise<R> {
    // Checked before discovery too: a refused name makes no request at all.
    const what = this.what(verb, ref);
    const name = checkedName(ref.name, what);
    checkedNamespace(ref.namespace, true, what, true);
    const sub = checkedSubresource(subresource, what);
    const resource = await this.resolve();
    const namespace = checkedNamespace(ref.namespace, resource.namespaced, what);
    return this.client.request<R>(method, objectPath(resource, namespace, name, sub), init);
  }

  private what(verb: string, ref?: ObjectRef): string {
    const target = ref ? ` ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name ?? ''}` : '';
    return `${verb} ${this.name}.${this.apiVersion}${target}`;
  }
}

function dryRun(options: WriteOptions): Query {
  return options.dryRun ? { dryRun: 'All' } : {};
}
