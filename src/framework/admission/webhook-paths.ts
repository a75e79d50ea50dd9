import type { AdmissionSpec } from '../handler/admission-specs.js';

/**
 * The URL path of an admission handler's webhook: `/validate/<id>` or `/mutate/<id>`, the id
 * encoded as one path segment (ids such as `Widgets.check` need none; `/` in an id is encoded).
 */
export function webhookPath(spec: Pick<AdmissionSpec, 'kind' | 'id'>): string {
  return `/${spec.kind}/${encodeURIComponent(spec.id)}`;
}

/** The URL path of a CRD's conversion webhook: `/convert/<group>/<plural>`. */
export function conversionPath(group: string, plural: string): string {
  return `/convert/${encodeURIComponent(group)}/${encodeURIComponent(plural.toLowerCase())}`;
}
