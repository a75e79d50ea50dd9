import type { ApiClient } from './api-client.js';
import { ApiError } from './api-error.js';
import {
  groupVersionPath,
  splitApiVersion,
  type Resource,
  type ResourceSelector,
} from './resource.js';

interface ApiResourceList {
  resources?: Array<{
    name: string;
    singularName?: string;
    namespaced: boolean;
    kind: string;
    shortNames?: string[];
  }>;
}

/** Raised when a group/version is served but has no resource by that name, or is not served (yet). */
export class ResourceNotFoundError extends Error {
  override readonly name = 'ResourceNotFoundError';
}

/**
 * Resolves a {@link ResourceSelector} through the API server's discovery endpoint
 * (`/apis/<group>/<version>`), matching plural, kind, singular or short name (case-insensitive).
 * Throws {@link ResourceNotFoundError} when the group/version or the name is unknown, which is
 * the normal state before a CRD is installed: callers retry.
 */
export async function discoverResource(
  client: ApiClient,
  selector: ResourceSelector,
): Promise<Resource> {
  const { group, version } = splitApiVersion(selector.apiVersion);
  let list: ApiResourceList;
  try {
    list = await client.request<ApiResourceList>('GET', groupVersionPath(group, version));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      throw new ResourceNotFoundError(
        `${selector.apiVersion} is not served by the API server: is the CRD for '${selector.name}' installed?`,
      );
    }
    throw error;
  }
  const wanted = selector.name.toLowerCase();
  const all = (list.resources ?? []).filter((r) => !r.name.includes('/'));
  const subresources = new Set(
    (list.resources ?? []).filter((r) => r.name.includes('/')).map((r) => r.name),
  );
  const found =
    all.find((r) => r.name === wanted) ??
    all.find((r) => r.kind.toLowerCase() === wanted) ??
    all.find((r) => r.singularName === wanted) ??
    all.find((r) => r.shortNames?.includes(wanted));
  if (!found) {
    throw new ResourceNotFoundError(
      `${selector.apiVersion} has no resource named '${selector.name}' (known: ${all.map((r) => r.name).join(', ') || 'none'})`,
    );
  }
  return {
    group,
    version,
    plural: found.name,
    kind: found.kind,
    namespaced: found.namespaced,
    hasStatus: subresources.has(`${found.name}/status`),
  };
}
