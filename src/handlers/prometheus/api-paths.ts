/**
 * API paths of the objects the Prometheus operator reads and writes. Every segment taken from an
 * object (namespace, name) is percent-encoded, so no value can add a segment, climb with `..` or
 * reach another namespace's objects. The framework's own path builder is not public API, hence
 * this small one.
 */

/** The monitoring group's version path. */
export const MONITORING_PATH = '/apis/monitoring.coreos.com/v1';

/**
 * One path segment. `encodeURIComponent` leaves `.` alone, and URL parsing resolves the dot
 * segments `.` and `..` even when spelled `%2E%2E`, so those are refused (Kubernetes allows neither
 * as a name); so is an empty segment, which would turn an object path into its collection's.
 */
function segment(value: string): string {
  if (value === '' || value === '.' || value === '..') {
    throw new Error(`${JSON.stringify(value)} cannot be a namespace or name in an API path; Kubernetes names are never empty, "." or ".."`);
  }
  return encodeURIComponent(value);
}

/** `/apis/monitoring.coreos.com/v1/namespaces/<ns>/<plural>[/<name>[/status]]`. */
export function monitoringPath(
  namespace: string,
  plural: 'prometheuses' | 'servicemonitors' | 'podmonitors' | 'prometheusrules',
  name?: string,
  subresource?: 'status',
): string {
  const base = `${MONITORING_PATH}/namespaces/${segment(namespace)}/${plural}`;
  if (name === undefined) return base;
  return `${base}/${segment(name)}${subresource ? `/${subresource}` : ''}`;
}

/** `/api/v1/namespaces/<ns>/<plural>[/<name>]` for the core objects the operator owns. */
export function corePath(namespace: string, plural: 'secrets' | 'services' | 'configmaps', name?: string): string {
  const base = `/api/v1/namespaces/${segment(namespace)}/${plural}`;
  return name === undefined ? base : `${base}/${segment(name)}`;
}

/** `/apis/apps/v1/namespaces/<ns>/statefulsets[/<name>]`. */
export function statefulSetPath(namespace: string, name?: string): string {
  const base = `/apis/apps/v1/namespaces/${segment(namespace)}/statefulsets`;
  return name === undefined ? base : `${base}/${segment(name)}`;
}
