/**
 * Which object a request is about: `{ namespace, name }`. An object's own `metadata` is one, so
 * `pods.get(child.metadata)` works; a missing name is refused at run time.
 */
export interface ObjectRef {
  /** The object's namespace; none for a cluster-scoped object. */
  readonly namespace?: string;
  /** The object's name; required. */
  readonly name?: string;
}

/** A namespace name as Kubernetes allows it (RFC 1123 label). */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Subresources are lowercase words (`status`, `scale`, `ephemeralcontainers`). */
const SUBRESOURCE = /^[a-z]+$/;

/**
 * The object's name, checked before any request is built: never empty, `.` or `..`, and without
 * `/` or `%` (the API server's own rule for names in paths). Names come from specs and annotations,
 * which are attacker-controlled; a refused name must not turn into a request for another path.
 */
export function checkedName(name: string | undefined, what: string): string {
  if (typeof name !== 'string' || name === '')
    throw new Error(`${what}: the object has no name; pass { namespace, name }`);
  if (name === '.' || name === '..' || name.includes('/') || name.includes('%')) {
    throw new Error(
      `${what}: refusing the name ${JSON.stringify(name)}: names may not be "." or ".." nor contain "/" or "%"`,
    );
  }
  return name;
}

/** The namespace for a namespaced resource (required unless `optional`), checked; undefined for cluster-scoped ones. */
export function checkedNamespace(
  namespace: string | undefined,
  namespaced: boolean,
  what: string,
  optional = false,
): string | undefined {
  if (!namespaced) return undefined;
  if (namespace === undefined || namespace === '') {
    if (optional) return undefined;
    throw new Error(`${what}: the resource is namespaced; pass a namespace`);
  }
  if (namespace.length > 63 || !NAMESPACE.test(namespace))
    throw new Error(
      `${what}: refusing the namespace ${JSON.stringify(namespace)}: not a valid namespace name`,
    );
  return namespace;
}

/** A subresource name, checked (it becomes a path segment). */
export function checkedSubresource(
  subresource: string | undefined,
  what: string,
): string | undefined {
  if (subresource === undefined) return undefined;
  if (!SUBRESOURCE.test(subresource))
    throw new Error(`${what}: refusing the subresource ${JSON.stringify(subresource)}`);
  return subresource;
}

/** A label selector as a string: `app=web,tier!=db`, or `{ app: 'web' }` for equality on each label. */
export function selectorString(
  selector: string | Readonly<Record<string, string>> | undefined,
): string | undefined {
  if (selector === undefined || typeof selector === 'string') return selector;
  const entries = Object.entries(selector);
  return entries.length === 0
    ? undefined
    : entries.map(([key, value]) => `${key}=${value}`).join(',');
}
