import { Duration } from 'luxon';

/** A duration: an ISO-8601 string (`PT1H`, `PT0.5S`), a luxon `Duration`, or plain seconds. */
export type DurationInput = string | number | Duration;

/** Milliseconds of a duration; throws naming the bad value, so a typo fails at registration, not at 3 a.m. */
export function toMilliseconds(value: DurationInput, what = 'duration'): number {
  let ms: number;
  if (typeof value === 'number') ms = value * 1000;
  else if (typeof value === 'string') {
    const parsed = Duration.fromISO(value);
    if (!parsed.isValid)
      throw new Error(`${what}: '${value}' is not an ISO-8601 duration (e.g. 'PT30S', 'PT1H')`);
    ms = parsed.toMillis();
  } else if (Duration.isDuration(value)) {
    if (!value.isValid) {
      const why =
        [value.invalidReason, value.invalidExplanation].filter(Boolean).join(': ') ||
        'no reason given';
      throw new Error(`${what}: invalid luxon Duration (${why})`);
    }
    ms = value.toMillis();
  } else {
    throw new Error(`${what}: expected an ISO-8601 string, a luxon Duration or seconds`);
  }
  if (!Number.isFinite(ms) || ms < 0)
    throw new Error(`${what}: must be a finite, non-negative duration`);
  return ms;
}
