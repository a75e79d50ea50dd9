/**
 * Prometheus durations (`model.ParseDuration`): `15s`, `1m30s`, `500ms`, `1h`, `2d`, `1w`, `1y`, `0`,
 * units largest first, at most what an int64 of nanoseconds holds.
 */

/** Used when `scrapeInterval` / `evaluationInterval` are unset. */
export const DEFAULT_INTERVAL = '30s';

const DURATION = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const DURATION_UNITS_MS = [
  365 * 86_400_000,
  7 * 86_400_000,
  86_400_000,
  3_600_000,
  60_000,
  1000,
  1,
].map(BigInt);
/** Go's `time.Duration` is int64 nanoseconds: Prometheus refuses longer durations ("duration out of range"), about 292 years. */
const MAX_DURATION_NS = 2n ** 63n - 1n;

/** A duration's length in milliseconds, or why it is not one Prometheus accepts. */
function readDuration(text: string): number | 'invalid' | 'out of range' {
  if (text === '0') return 0;
  if (text === '') return 'invalid';
  const match = DURATION.exec(text);
  if (match === null) return 'invalid';
  let totalMs = 0n;
  DURATION_UNITS_MS.forEach((unit, i) => {
    const amount = match[i + 1];
    if (amount !== undefined) totalMs += BigInt(amount) * unit;
  });
  // As model.ParseDuration: the sum in nanoseconds must fit an int64.
  if (totalMs * 1_000_000n > MAX_DURATION_NS) return 'out of range';
  return Number(totalMs);
}

/**
 * Parses a Prometheus duration (`15s`, `1m30s`, `500ms`, `1h`, `2d`, `1w`, `1y`, `0`) into
 * milliseconds; `undefined` when the text is not one, or is longer than Prometheus can hold
 * (about 292 years, e.g. `300y`). Units must appear largest first, as in `model.ParseDuration`.
 */
export function parseDuration(text: string): number | undefined {
  const result = readDuration(text);
  return typeof result === 'number' ? result : undefined;
}

/** Why `value` (a field that is unset when `undefined` or empty) is not a Prometheus duration, or `undefined`. */
export function durationProblem(value: unknown, field: string): string | undefined {
  // An empty string counts as unset, as when generating.
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string')
    return `${field}: must be a duration string (e.g. 30s), not ${typeof value}`;
  const result = readDuration(value);
  if (result === 'invalid')
    return `${field}: "${value}" is not a valid duration (e.g. 30s, 1m30s, 500ms)`;
  if (result === 'out of range')
    return `${field}: "${value}" is out of range (Prometheus durations end at about 292y)`;
  return undefined;
}
