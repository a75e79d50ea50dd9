import { createHash } from 'node:crypto';

/** Prefix of every annotation and finalizer the framework writes. */
export const PREFIX = 'konductor.dev';
/** Where the last handled essence of an object is kept. */
export const DIFF_BASE_KEY = `${PREFIX}/last-handled-configuration`;
/** The framework's finalizer. */
export const FINALIZER = `${PREFIX}/finalizer`;

/**
 * The annotation key for a handler's progress: `konductor.dev/<id>`. The name part must be a valid
 * annotation name (at most 63 characters of `[A-Za-z0-9._-]`, alphanumeric at both ends), so other
 * characters become `.` and long ids are cut and suffixed with a hash to stay unique.
 */
export function progressKey(handlerId: string): string {
  return `${PREFIX}/${annotationName(handlerId)}`;
}

/** Makes any string a valid annotation name (the part after the prefix). */
export function annotationName(raw: string): string {
  const cleaned = raw.replace(/[^A-Za-z0-9._-]/g, '.').replace(/^[^A-Za-z0-9]+/, '').replace(/[^A-Za-z0-9]+$/, '');
  // Readable when only `/` (field handlers: `Class.method/spec.size`) had to change and it fits, like Kopf.
  if (cleaned.length > 0 && cleaned.length <= 63 && cleaned === raw.replace(/\//g, '.')) return cleaned;
  // Otherwise cut, and add a short hash of the original so two ids never share a key.
  const digest = createHash('sha256').update(raw).digest('hex').slice(0, 8);
  return cleaned ? `${cleaned.slice(0, 54).replace(/[^A-Za-z0-9]+$/, '')}-${digest}` : digest;
}

/** Whether an annotation key belongs to the framework (excluded from the essence). */
export function isFrameworkKey(key: string): boolean {
  return key.startsWith(`${PREFIX}/`);
}
