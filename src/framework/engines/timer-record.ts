/**
 * The schedule a long timer keeps in an annotation on its object, and its validation. Anyone who can
 * edit the object can edit the annotation, so it is read field by field: a record that is not what
 * the framework writes is rejected as a whole (the timer starts its schedule over), and times in the
 * future are clamped, so no stored value can suspend a timer or make it run early in a loop.
 */
import { Identity } from '../state/identity.js';
import type { TimerState } from './schedule.js';
import type { TimerSettings } from './timer-settings.js';

/** The annotation holding a long timer's schedule (see `Identity.timerKey`). */
export function timerKey(timerId: string, identity: Identity = Identity.DEFAULT): string {
  return identity.timerKey(timerId);
}

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
  | {
      ok: true;
      record: TimerRecord;
      /** Why some times were moved back to `now`, if they were. */ clamped?: string;
    }
  | { ok: false; problem: string };

/** How the framework writes times (`Date.toISOString()`), with an optional offset for hand-written ones. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

const FIELDS = ['lastStart', 'lastEnd', 'lastSuccess', 'lastPlanned', 'grid'] as const;
const REQUIRED = new Set<string>(['lastStart', 'lastEnd']);

/** Epoch ms of a stored time; a string saying what is wrong otherwise. */
function readTime(field: string, value: unknown): number | string {
  if (typeof value !== 'string')
    return `${field} must be an ISO-8601 time string, got ${value === null ? 'null' : typeof value}`;
  const ms = ISO_TIME.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms))
    return `${field} '${value.length > 40 ? `${value.slice(0, 40)}...` : value}' is not an ISO-8601 UTC time`;
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
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return { ok: false, problem: 'not a JSON object' };
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
  return future.length > 0
    ? { ok: true, record: valid, clamped: `${future.join(', ')} in the future; taken as now` }
    : { ok: true, record: valid };
}

/** Where a timer starts on first sight of an object, and what to warn about its stored record, if anything. */
export interface RestoredTimer {
  state: TimerState;
  warning?: string;
}

/**
 * A timer's state on first sight of an object: from its stored record (`raw`) when the timer is
 * persisted and the record valid, otherwise a fresh start at `now`. `settings` is undefined when the
 * interval is invalid for this object (the scheduler reports that).
 */
export function restoreTimerState(
  raw: string | undefined,
  settings: TimerSettings | undefined,
  now: number,
): RestoredTimer {
  const state: TimerState = { firstSeen: now, lastChange: now };
  if (raw === undefined || !settings?.persists) return { state };
  const reading = readTimerRecord(raw, now, settings.schedule.intervalMs ?? 0);
  if (!reading.ok)
    return { state, warning: `${reading.problem}; ignored, the timer starts its schedule over` };
  const { record } = reading;
  state.lastStart = record.lastStart;
  state.lastEnd = record.lastEnd;
  state.lastPlanned = record.lastPlanned;
  state.gridAnchor = record.grid;
  state.lastChange = Math.min(now, record.lastStart); // a restart is not a change
  return reading.clamped
    ? { state, warning: `${reading.clamped}, so the timer is not suspended` }
    : { state };
}

/**
 * The record to store after a run: its start and end, and the last success (this run's end, or the
 * one kept in the `previous` record). Sharp timers also keep their grid, so a restart stays on it.
 */
export function recordAfterRun(
  previous: string | undefined,
  state: TimerState,
  settings: TimerSettings,
  succeeded: boolean,
  now: number,
): PersistedTimer {
  const { schedule } = settings;
  const reading =
    previous === undefined ? undefined : readTimerRecord(previous, now, schedule.intervalMs ?? 0);
  const kept = reading?.ok ? reading.record.lastSuccess : undefined;
  const lastSuccess = kept === undefined ? undefined : new Date(kept).toISOString();
  const record: PersistedTimer = {
    lastStart: new Date(state.lastStart ?? now).toISOString(),
    lastEnd: new Date(state.lastEnd ?? now).toISOString(),
    lastSuccess: succeeded ? new Date(state.lastEnd ?? now).toISOString() : lastSuccess,
  };
  if (schedule.sharp && state.lastPlanned !== undefined && state.gridAnchor !== undefined) {
    record.lastPlanned = new Date(state.lastPlanned).toISOString();
    record.grid = new Date(state.gridAnchor).toISOString();
  }
  return record;
}
