/** A DNS-1123 subdomain, as Kubernetes requires of object names (at most 253 characters). */
export const DNS1123_SUBDOMAIN =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether `name` is a valid object name (DNS-1123 subdomain): names read from specs are checked before use. */
export function isObjectName(name: unknown): name is string {
  return typeof name === 'string' && name.length <= 253 && DNS1123_SUBDOMAIN.test(name);
}
