import { Duration } from 'luxon';
import { toMilliseconds } from '../../../src/framework/clock/duration.js';

describe('durations', () => {
  test('plain numbers are seconds', () => {
    expect(toMilliseconds(30)).toBe(30_000);
    expect(toMilliseconds(0.25)).toBe(250);
    expect(toMilliseconds(0)).toBe(0);
  });

  test('ISO-8601 strings are read with their units, fractions included', () => {
    expect(toMilliseconds('PT30S')).toBe(30_000);
    expect(toMilliseconds('PT1H')).toBe(3_600_000);
    expect(toMilliseconds('PT1M30S')).toBe(90_000);
    expect(toMilliseconds('PT0.5S')).toBe(500);
    expect(toMilliseconds('P1D')).toBe(86_400_000);
  });

  test('luxon Durations are taken as they are', () => {
    expect(toMilliseconds(Duration.fromObject({ minutes: 2 }))).toBe(120_000);
    expect(toMilliseconds(Duration.fromObject({ hours: 1, milliseconds: 5 }))).toBe(3_600_005);
    expect(toMilliseconds(Duration.fromISO('PT10S'))).toBe(10_000);
  });

  test('strings of seconds and numbers with units are read as flags take them', () => {
    expect(toMilliseconds('30')).toBe(30_000);
    expect(toMilliseconds('90s')).toBe(90_000);
    expect(toMilliseconds('5m')).toBe(300_000);
    expect(toMilliseconds('1h30m')).toBe(5_400_000);
    expect(toMilliseconds('500ms')).toBe(500);
    expect(toMilliseconds('2d')).toBe(172_800_000);
    expect(toMilliseconds('1.5s')).toBe(1_500);
  });

  test('a string in no accepted form is refused with the option it was given for and the forms', () => {
    expect(() => toMilliseconds('10 seconds', 'timer backup interval')).toThrow(
      `timer backup interval: '10 seconds' is not a duration: give seconds (30), numbers with units ('90s', '5m', '1h30m') or ISO-8601 ('PT30S')`,
    );
    expect(() => toMilliseconds('5x')).toThrow("'5x' is not a duration");
    expect(() => toMilliseconds('')).toThrow("'' is not a duration");
  });

  test("an invalid luxon Duration is refused with luxon's reason", () => {
    expect(() =>
      toMilliseconds(Duration.invalid('unparsable', 'from a bad policy field'), 'idle'),
    ).toThrow('idle: invalid luxon Duration (unparsable: from a bad policy field)');
  });

  test('negative and non-finite durations are refused', () => {
    expect(() => toMilliseconds(-1, 'initialDelay')).toThrow(
      'initialDelay: must be a finite, non-negative duration',
    );
    expect(() => toMilliseconds(Number.POSITIVE_INFINITY)).toThrow(
      'must be a finite, non-negative duration',
    );
    expect(() => toMilliseconds(Number.NaN)).toThrow('must be a finite, non-negative duration');
    expect(() => toMilliseconds('-PT5S')).toThrow('must be a finite, non-negative duration');
  });

  test('a value of another type is refused, naming the accepted forms', () => {
    expect(() => toMilliseconds({ seconds: 5 } as unknown as number, 'interval')).toThrow(
      `interval: expected seconds (30), numbers with units ('90s', '5m', '1h30m') or ISO-8601 ('PT30S'), or a luxon Duration`,
    );
  });
});
