/**
 * Timer schedule arithmetic, pure so it can be tested with a fake clock. All times are epoch ms.
 *
 * - `interval`: non-sharp timers run `interval` after the previous run ended; sharp ones on a fixed
 *   grid, `gridAnchor + k × interval`, anchored at the first planned start, so a late start does not
 *   move later runs. A run that outlasts the interval skips the slots it covered: no overlap, no burst.
 * - `initialDelay`: the first run waits this long after the object was first seen (when no earlier run
 *   is known, e.g. from a persisted schedule).
 * - `idle`: run only once the object has not changed for this long; every change restarts the wait.
 *   Without `interval`, an idle timer runs once per quiet period.
 * - A retry (after an error) may come earlier than the next tick, never later.
 * - A timer with neither interval nor idle runs once.
 */
export interface TimerSchedule {
  intervalMs?: number;
  initialDelayMs?: number;
  idleMs?: number;
  sharp?: boolean;
}

export interface TimerState {
  /** When this process first saw the object. */
  firstSeen: number;
  /** When the object's essence last changed (its creation counts). */
  lastChange: number;
  lastStart?: number;
  lastEnd?: number;
  /** An earlier retry asked for after a failure. */
  retryAt?: number;
  /** Sharp timers: a point of the grid (the first planned start). Unknown after a restart: the last start stands in. */
  gridAnchor?: number;
  /** When the previous run was due; its actual start may be later (a busy event loop) or a hair earlier (timer rounding). */
  lastPlanned?: number;
}

/** When the timer should run next, or undefined when it never runs again (until the object changes). */
export function nextRunAt(schedule: TimerSchedule, state: TimerState): number | undefined {
  const { intervalMs, idleMs, sharp } = schedule;
  let next: number | undefined;
  if (state.lastStart === undefined || state.lastEnd === undefined) {
    next = state.firstSeen + (schedule.initialDelayMs ?? 0);
  } else if (intervalMs !== undefined && intervalMs > 0) {
    if (sharp) {
      // Counting slots from the planned start, not the actual one, keeps lateness from accumulating.
      const anchor = state.gridAnchor ?? state.lastStart;
      const previous = state.lastPlanned ?? state.lastStart;
      const afterPrevious = Math.floor((previous - anchor) / intervalMs) + 1;
      const afterEnd = Math.ceil((state.lastEnd - anchor) / intervalMs);
      next = anchor + Math.max(afterPrevious, afterEnd) * intervalMs;
    } else {
      next = state.lastEnd + intervalMs;
    }
  } else if (idleMs !== undefined && state.lastChange > state.lastStart) {
    next = state.lastChange + idleMs; // idle-only: once per quiet period, after a change
  }
  if (next !== undefined && idleMs !== undefined) next = Math.max(next, state.lastChange + idleMs);
  if (state.retryAt !== undefined)
    next = next === undefined ? state.retryAt : Math.min(next, state.retryAt);
  return next;
}
