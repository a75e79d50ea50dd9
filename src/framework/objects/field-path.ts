/** A dotted field path such as `spec.size`, as a list of keys. */
export type FieldPath = readonly string[];

/** Parses `spec.size` (or an array of keys) into keys. */
export function parseFieldPath(path: string | FieldPath): FieldPath {
  return typeof path === 'string' ? path.split('.').filter((part) => part !== '') : path;
}

/** Reads a nested value; undefined when any step is missing. */
export function getField(value: unknown, path: FieldPath): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** Writes a nested value, creating objects on the way. */
export function setField(target: Record<string, unknown>, path: FieldPath, value: unknown): void {
  let current = target;
  path.forEach((key, index) => {
    if (index === path.length - 1) {
      current[key] = value;
      return;
    }
    const next = current[key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) current[key] = {};
    current = current[key] as Record<string, unknown>;
  });
}
