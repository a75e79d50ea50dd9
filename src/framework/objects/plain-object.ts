/**
 * Whether a JSON value is an object with fields (not null, not an array): the one check every reader of
 * attacker-controlled specs, annotations and reviews makes before looking inside.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
