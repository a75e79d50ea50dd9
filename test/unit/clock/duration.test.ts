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

  test('a string that is not ISO-8601 is refused with the option it was given for and an example', () => {
    expect(() => toMilliseconds('10s', 'timer backup interval')).toThrow(
      "timer backup interval: '10s' is not an ISO-8601 duration (e.g. 'PT30S', 'PT1H')",
    );
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
      'interval: expected an ISO-8601 string, a luxon Duration or seconds',
    );
  });
});
