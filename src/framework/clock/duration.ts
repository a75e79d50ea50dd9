import { Duration } from 'luxon';

/**
 * A duration, in the one form every option, decorator and flag takes: plain seconds (`30`, `0.5`), a
 * string of seconds (`'30'`), numbers with units (`'90s'`, `'5m'`, `'1h30m'`, `'500ms'`, `'2d'`), an
 * ISO-8601 string (`'PT30S'`, `'P1D'`) or a luxon `Duration`.
 */
export type DurationInput = string | number | Duration;

/** What a refusal lists, so every wrong duration is answered the same way. */
export const DURATION_FORMS =
  "seconds (30), numbers with units ('90s', '5m', '1h30m') or ISO-8601 ('PT30S')";

const MS_PER_UNIT: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const SECONDS = /^\d+(\.\d+)?$/;
const WITH_UNITS = /^(\d+(\.\d+)?(ms|s|m|h|d))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** Milliseconds of a duration string, or undefined when it is in none of the accepted forms. */
function parseText(text: string): number | undefined {
  const value = text.trim();
  if (SECONDS.test(value)) return Number(value) * 1_000;
  if (WITH_UNITS.test(value)) {
    let ms = 0;
    for (const [, amount, unit] of value.matchAll(PART)) ms += Number(amount) * MS_PER_UNIT[unit!]!;
    return ms;
  }
  const iso = Duration.fromISO(value);
  return iso.isValid ? iso.toMillis() : undefined;
}

/** Milliseconds of a duration; throws naming the bad value, so a typo fails at registration, not at 3 a.m. */
export function toMilliseconds(value: DurationInput, what = 'duration'): number {
  let ms: number;
  if (typeof value === 'number') ms = value * 1000;
  else if (typeof value === 'string') {
    const parsed = parseText(value);
    if (parsed === undefined)
      throw new Error(`${what}: '${value}' is not a duration: give ${DURATION_FORMS}`);
    ms = parsed;
  } else if (Duration.isDuration(value)) {
    if (!value.isValid) {
      const why =
        [value.invalidReason, value.invalidExplanation].filter(Boolean).join(': ') ||
        'no reason given';
      throw new Error(`${what}: invalid luxon Duration (${why})`);
    }
    ms = value.toMillis();
  } else {
    throw new Error(`${what}: expected ${DURATION_FORMS}, or a luxon Duration`);
  }
  if (!Number.isFinite(ms) || ms < 0)
    throw new Error(`${what}: must be a finite, non-negative duration`);
  return ms;
}
