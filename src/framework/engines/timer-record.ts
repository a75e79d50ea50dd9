/**
 * The schedule a long timer keeps in an annotation on its object, and its validation. Anyone who can
 * edit the object can edit the annotation, so it is read field by field: a record that is not what
 * the framework writes is rejected as a whole (the timer starts its schedule over), and times in the
 * future are clamped, so no stored value can suspend a timer or make it run early in a loop.
 */

/** What a long timer keeps on the object (ISO-8601 UTC times). */
export interface PersistedTimer {
  lastStart?: string;
  lastEnd?: string;
  lastSuccess?: string;
  /** Sharp timers: when the last run was due, and a point of the grid, so a restart keeps the grid. */
  lastPlanned?: string;
  grid?: string;
}

/** A valid record as epoch ms, with every time at or before `now`. */
export interface TimerRecord {
  lastStart: number;
  lastEnd: number;
  lastSuccess?: number;
  lastPlanned?: number;
  grid?: number;
}

export type TimerRecordReading =
  | { ok: true; record: TimerRecord; /** Why some times were moved back to `now`, if they were. */ clamped?: string }
  | { ok: false; problem: string };

/** How the framework writes times (`Date.toISOString()`), with an optional offset for hand-written ones. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

const FIELDS = ['lastStart', 'lastEnd', 'lastSuccess', 'lastPlanned', 'grid'] as const;
const REQUIRED = new Set<string>(['lastStart', 'lastEnd']);

/** Epoch ms of a stored time; a string saying what is wrong otherwise. */
function readTime(field: string, value: unknown): number | string {
  if (typeof value !== 'string') return `${field} must be an ISO-8601 time string, got ${value === null ? 'null' : typeof value}`;
  const ms = ISO_TIME.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) return `${field} '${value.length > 40 ? `${value.slice(0, 40)}...` : value}' is not an ISO-8601 UTC time`;
  return ms;
}

/**
 * Reads a persisted timer record. `intervalMs` is the timer's interval: a time later than `now` is
 * clamped to `now` (a run cannot have happened in the future), and one later than `now + intervalMs`
 * is reported in `clamped`, since it cannot be clock skew between replicas.
 */
export function readTimerRecord(raw: string, now: number, intervalMs: number): TimerRecordReading {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { ok: false, problem: 'not valid JSON' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return { ok: false, problem: 'not a JSON object' };
  const fields = parsed as Record<string, unknown>;
  const record: Partial<TimerRecord> = {};
  const problems: string[] = [];
  const future: string[] = [];
  for (const field of FIELDS) {
    const value = fields[field];
    if (value === undefined) {
      if (REQUIRED.has(field)) problems.push(`${field} is missing`);
      continue;
    }
    const ms = readTime(field, value);
    if (typeof ms === 'string') {
      problems.push(ms);
      continue;
    }
    if (ms > now + intervalMs) future.push(`${field} ${new Date(ms).toISOString()}`);
    record[field] = Math.min(ms, now);
  }
  if (problems.length > 0) return { ok: false, problem: problems.join('; ') };
  const valid = record as TimerRecord;
  return future.length > 0 ? { ok: true, record: valid, clamped: `${future.join(', ')} in the future; taken as now` } : { ok: true, record: valid };
}
