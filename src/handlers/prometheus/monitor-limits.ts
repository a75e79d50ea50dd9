/**
 * Size limits on ServiceMonitors and PodMonitors, checked first at admission and again at render:
 * upstream has none, and without them one tenant's monitor can fill a shared Prometheus's
 * configuration Secret (see config-budget.ts), or cost every render of it the time of a megabyte.
 */

/** The longest string accepted anywhere in a monitor's spec (a relabeling's `replacement`, a `path`, a label name...), as for regexes. */
export const MAX_MONITOR_STRING = 1024;
/** A monitor's spec, serialized as JSON, in UTF-8 bytes: ten times what the largest monitors in common use take. */
export const MAX_MONITOR_SPEC_BYTES = 128 * 1024;
/** Over-long strings named in one answer; the rest are counted. */
const NAMED = 5;

function longStrings(value: unknown, path: string, found: string[]): void {
  if (typeof value === 'string') {
    if (value.length > MAX_MONITOR_STRING) found.push(path);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => longStrings(item, `${path}[${i}]`, found));
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const [key, item] of Object.entries(value)) {
    const at = `${path}.${key.length > 64 ? `${key.slice(0, 60)}…` : key}`;
    if (key.length > MAX_MONITOR_STRING) found.push(`${at} (the key)`);
    // Regexes have their own check, with the same limit, and say more (validation.ts).
    if (key !== 'regex') longStrings(item, at, found);
  }
}

/**
 * Why a monitor's spec is too large to render, or nothing: more than {@link MAX_MONITOR_SPEC_BYTES}
 * serialized, or strings longer than {@link MAX_MONITOR_STRING} characters (each named by field).
 * Checked before anything else, so an oversized monitor costs one measurement.
 */
export function monitorSizeProblems(spec: unknown): string[] {
  const bytes = Buffer.byteLength(JSON.stringify(spec ?? null) ?? '');
  if (bytes > MAX_MONITOR_SPEC_BYTES) {
    return [
      `spec: ${bytes} bytes serialized, more than the ${MAX_MONITOR_SPEC_BYTES} accepted: split it into several monitors`,
    ];
  }
  const found: string[] = [];
  longStrings(spec, 'spec', found);
  const named = found
    .slice(0, NAMED)
    .map((field) => `${field}: longer than the ${MAX_MONITOR_STRING} characters accepted`);
  if (found.length > NAMED)
    named.push(
      `and ${found.length - NAMED} more strings longer than ${MAX_MONITOR_STRING} characters`,
    );
  return named;
}
