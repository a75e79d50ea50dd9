import { shortHash } from '../objects/short-hash.js';

/**
 * Makes any string a valid annotation name (the part after the prefix): at most 63 characters of
 * `[A-Za-z0-9._-]`, alphanumeric at both ends. Other characters become `.`, and long or changed ids
 * are cut and suffixed with a hash so two ids never share a key.
 */
export function annotationName(raw: string): string {
  const cleaned = raw
    .replace(/[^A-Za-z0-9._-]/g, '.')
    .replace(/^[^A-Za-z0-9]+/, '')
    .replace(/[^A-Za-z0-9]+$/, '');
  // Readable when only `/` (field handlers: `Class.method/spec.size`) had to change and it fits, like Kopf.
  if (cleaned.length > 0 && cleaned.length <= 63 && cleaned === raw.replace(/\//g, '.'))
    return cleaned;
  // Otherwise cut, and add a short hash of the original so two ids never share a key.
  const digest = shortHash(raw);
  return cleaned ? `${cleaned.slice(0, 54).replace(/[^A-Za-z0-9]+$/, '')}-${digest}` : digest;
}
