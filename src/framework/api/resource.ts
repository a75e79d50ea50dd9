/** A resource as a user names it: `group/version` (or `v1` for the core group) plus a plural, kind or short name. */
export interface ResourceSelector {
  /** `group/version`, e.g. `example.com/v1`; `v1` for the core group. */
  apiVersion: string;
  /** Plural (`widgets`), kind (`Widget`), singular or short name (`wg`). */
  name: string;
}

/** A resource resolved through discovery: everything needed to build request paths. */
export interface Resource {
  /** The API group; empty for the core group. */
  group: string;
  /** The version, such as `v1`. */
  version: string;
  /** The plural name, as request paths use it (`widgets`). */
  plural: string;
  /** The kind, as objects carry it (`Widget`). */
  kind: string;
  /** Whether objects live in namespaces (false for cluster-scoped resources). */
  namespaced: boolean;
  /** Whether the resource has a `/status` subresource. */
  hasStatus: boolean;
}

/** Splits `group/version` (or core `version`). */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.lastIndexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** `example.com/v1` for named groups, `v1` for the core group. */
export function apiVersionOf(resource: Pick<Resource, 'group' | 'version'>): string {
  return resource.group ? `${resource.group}/${resource.version}` : resource.version;
}

/** `/apis/<group>/<version>` or `/api/<version>`. */
export function groupVersionPath(group: string, version: string): string {
  return group ? `/apis/${group}/${version}` : `/api/${version}`;
}

/**
 * One path segment from a name: encoded, and never empty, `.` or `..`, which encoding leaves as they
 * are and `new URL` would resolve (an empty name would address the whole collection).
 */
export function pathSegment(value: string, what: string): string {
  if (value === '' || value === '.' || value === '..')
    throw new Error(`refusing ${what} ${JSON.stringify(value)} in an API path`);
  return encodeURIComponent(value);
}

/** `coordination.k8s.io/v1` Leases: what leader election and shard membership hold. */
export const LEASES: Resource = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  kind: 'Lease',
  namespaced: true,
  hasStatus: false,
};

/** Core `v1` Events: what the framework posts about objects. */
export const EVENTS: Resource = {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
  hasStatus: false,
};

/** Core `v1` Namespaces: what a sharded or stopping replica checks for a namespace being deleted. */
export const NAMESPACES: Resource = {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
  hasStatus: true,
};

/** The collection path, in one namespace or across all. */
export function collectionPath(resource: Resource, namespace?: string): string {
  return resource.namespaced && namespace
    ? namespacedCollectionPath(resource, namespace)
    : `${groupVersionPath(resource.group, resource.version)}/${resource.plural}`;
}

/**
 * The collection path in exactly one namespace, for paths that must never widen to every namespace
 * (the operator's own Leases and Events): an empty namespace is refused, not read as "all".
 */
export function namespacedCollectionPath(resource: Resource, namespace: string): string {
  if (!resource.namespaced)
    throw new Error(
      `${resourceId(resource)} is cluster-scoped: it has no collection in a namespace`,
    );
  const base = groupVersionPath(resource.group, resource.version);
  return `${base}/namespaces/${pathSegment(namespace, 'namespace')}/${resource.plural}`;
}

/** One object's path (optionally a subresource such as `status`). */
export function objectPath(
  resource: Resource,
  namespace: string | undefined,
  name: string,
  subresource?: string,
): string {
  const path = `${collectionPath(resource, namespace)}/${pathSegment(name, 'name')}`;
  return subresource ? `${path}/${subresource}` : path;
}

/** A stable, readable id for a resource: `widgets.example.com/v1` or `pods/v1`. */
export function resourceId(resource: Pick<Resource, 'group' | 'version' | 'plural'>): string {
  return resource.group
    ? `${resource.plural}.${resource.group}/${resource.version}`
    : `${resource.plural}/${resource.version}`;
}
