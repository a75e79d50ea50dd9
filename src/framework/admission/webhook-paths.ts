import { createHash } from 'node:crypto';
import type { AdmissionSpec } from '../intents/admission-specs.js';

/** The API server's rule for each segment of a Service webhook's path: a lowercase DNS subdomain. */
const SERVICE_PATH_SEGMENT = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The URL path of an admission handler's webhook: `/validate/<segment>` or `/mutate/<segment>`.
 * The API server refuses a Service webhook whose path segments are not lowercase DNS subdomains, so
 * an id such as `EtcdAdmission.cluster` becomes `etcdadmission.cluster-<8 hex>`: lowercased, other
 * characters replaced by `-`, and a hash of the exact id appended whenever the id had to change, so two
 * ids differing only in case or punctuation never share a path.
 */
export function webhookPath(spec: Pick<AdmissionSpec, 'kind' | 'id'>): string {
  return `/${spec.kind}/${pathSegment(spec.id)}`;
}

/** `id` as one path segment the API server accepts for a Service webhook. */
export function pathSegment(id: string): string {
  if (SERVICE_PATH_SEGMENT.test(id) && id.length <= 200) return id;
  const slug = id
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/-*\.-*/g, '.')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '')
    .slice(0, 200)
    .replace(/[^a-z0-9]+$/, '');
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 8);
  return slug === '' ? hash : `${slug}-${hash}`;
}

/** The URL path of a CRD's conversion webhook: `/convert/<group>/<plural>`. */
export function conversionPath(group: string, plural: string): string {
  return `/convert/${encodeURIComponent(group)}/${encodeURIComponent(plural.toLowerCase())}`;
}
