import { API_VERSION } from './types.js';

/**
 * API paths of the objects the etcd operator touches. Every segment is percent-encoded, so a name
 * read from a spec (already validated, but attacker-written) can never add a segment, climb with
 * `..` or reach another namespace.
 */
const segment = (value: string): string => encodeURIComponent(value);

/** `/apis/etcd.database.coreos.com/v1beta2/namespaces/<ns>/<plural>[/<name>[/<sub>]]`. */
export function etcdPath(namespace: string, plural: 'etcdclusters' | 'etcdbackups' | 'etcdrestores', name?: string, subresource?: 'status'): string {
  const base = `/apis/${API_VERSION}/namespaces/${segment(namespace)}/${plural}`;
  if (name === undefined) return base;
  return `${base}/${segment(name)}${subresource ? `/${subresource}` : ''}`;
}

/** `/api/v1/namespaces/<ns>/<plural>[/<name>]` for core objects (Pods, Services, Secrets). */
export function corePath(namespace: string, plural: 'pods' | 'services' | 'secrets', name?: string): string {
  const base = `/api/v1/namespaces/${segment(namespace)}/${plural}`;
  return name === undefined ? base : `${base}/${segment(name)}`;
}

/** A DNS-1123 subdomain, as Kubernetes requires of object names (at most 253 characters). */
export const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether `name` is a valid object name (DNS-1123 subdomain). */
export function isObjectName(name: unknown): name is string {
  return typeof name === 'string' && name.length <= 253 && DNS1123_SUBDOMAIN.test(name);
}
