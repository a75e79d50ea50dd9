import { Duration } from 'luxon';
import { operatorTimings } from '../../../src/framework/runtime/operator-options.js';

describe('the operator options durations, in seconds or ISO-8601 like every other duration', () => {
  test('are converted to milliseconds once, whichever form they come in', () => {
    const timings = operatorTimings({
      handlerTimeout: 'PT1M',
      health: { port: 0, watchStall: 90, handlerStall: Duration.fromObject({ minutes: 2 }) },
      leaderElection: { namespace: 'ops', leaseDuration: 15, renewDeadline: 10, retryPeriod: 0.5 },
      watch: { idleTimeout: 30, reconnect: { initial: 0.1, max: 5 } },
    });
    expect(timings).toMatchObject({
      handlerTimeoutMs: 60_000,
      watchStallMs: 90_000,
      handlerStallMs: 120_000,
      lease: { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 500 },
      watch: { idleTimeoutMs: 30_000, backoff: { initialMs: 100, maxMs: 5_000 } },
    });
  });

  test('keep the defaults when not given: no handler timeout, 180 s watch stall, 300 s handler stall', () => {
    expect(operatorTimings({})).toMatchObject({
      handlerTimeoutMs: undefined,
      watchStallMs: 180_000,
      handlerStallMs: 300_000,
      watch: undefined,
    });
  });

  test('read a handler timeout of 0 as none', () => {
    expect(operatorTimings({ handlerTimeout: 0 }).handlerTimeoutMs).toBeUndefined();
  });

  test('read a duration written as a flag would be, with units', () => {
    expect(operatorTimings({ handlerTimeout: '1m30s' }).handlerTimeoutMs).toBe(90_000);
  });

  test('refuse a malformed duration, naming the option', () => {
    expect(() => operatorTimings({ handlerTimeout: 'half a minute' })).toThrow(
      /OperatorOptions\.handlerTimeout: 'half a minute' is not a duration: give seconds \(30\)/,
    );
    expect(() =>
      operatorTimings({ leaderElection: { namespace: 'ops', retryPeriod: -1 } }),
    ).toThrow(
      /OperatorOptions\.leaderElection\.retryPeriod: must be a finite, non-negative duration/,
    );
  });

  test('refuse a duration a timer cannot wait (over about 24.8 days), which setTimeout would fire at once', () => {
    expect(() => operatorTimings({ handlerTimeout: 'P30D' })).toThrow(
      /OperatorOptions\.handlerTimeout: at most 2147483\.647 s/,
    );
  });
});
