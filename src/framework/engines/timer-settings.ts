import { toMilliseconds } from '../clock/duration.js';
import type { TimerSpec } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { TimerSchedule } from './schedule.js';

/** Timers with an interval at least this long keep their schedule on the object, unless `persistThreshold` says otherwise. */
export const DEFAULT_PERSIST_THRESHOLD_MS = 60_000;

/** What a timer's options mean for one state of its object. */
export interface TimerSettings {
  schedule: TimerSchedule;
  /** Whether the schedule is kept in an annotation on the object, so a restarted operator keeps it. */
  persists: boolean;
}

/**
 * A timer's schedule for one state of the object (an interval may be computed from it) and whether it
 * is persisted. Throws on a bad interval, naming the timer: the object's problem, reported by the caller.
 */
export function timerSettings(spec: TimerSpec, body: KubeObject): TimerSettings {
  const { interval, initialDelay, idle, sharp, persistThreshold } = spec.options;
  const intervalValue = typeof interval === 'function' ? interval(body) : interval;
  const schedule: TimerSchedule = {
    intervalMs:
      intervalValue === undefined
        ? undefined
        : toMilliseconds(intervalValue, `timer ${spec.id} interval`),
    initialDelayMs: initialDelay === undefined ? undefined : toMilliseconds(initialDelay),
    idleMs: idle === undefined ? undefined : toMilliseconds(idle),
    sharp,
  };
  const threshold =
    persistThreshold === undefined
      ? DEFAULT_PERSIST_THRESHOLD_MS
      : toMilliseconds(persistThreshold);
  return {
    schedule,
    persists: schedule.intervalMs !== undefined && schedule.intervalMs >= threshold,
  };
}
