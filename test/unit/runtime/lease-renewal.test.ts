import {
  attemptTimeoutMs,
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  leaseTimings,
  renewAttemptMs,
  stillLeading,
  untilNextRenewalMs,
  type LeaseTimings,
  type RenewAttempt,
} from '../../../src/framework/runtime/lease-renewal.js';
import { MAX_TIMEOUT_MS } from '../../../src/framework/clock/long-timeout.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';

const DEFAULTS = leaseTimings({});

let clock: FakeClock;
beforeEach(() => {
  clock = installFakeClock({ now: '2026-11-27T12:00:00Z' });
});
afterEach(() => clock.uninstall());

describe('the default timings', () => {
  test('are 30 s / 20 s / 2 s, leaving 10 s between giving up and a possible takeover', () => {
    expect(DEFAULTS).toEqual({
      leaseDurationMs: 30_000,
      renewDeadlineMs: 20_000,
      retryPeriodMs: 2_000,
    });
    expect([DEFAULT_LEASE_DURATION_MS, DEFAULT_RENEW_DEADLINE_MS, DEFAULT_RETRY_PERIOD_MS]).toEqual(
      [30_000, 20_000, 2_000],
    );
  });

  test('fill in only what is not given', () => {
    expect(leaseTimings({ retryPeriodMs: 1_000 })).toEqual({
      leaseDurationMs: 30_000,
      renewDeadlineMs: 20_000,
      retryPeriodMs: 1_000,
    });
  });

  test('refuse a renew deadline not below the lease duration, naming both', () => {
    expect(() => leaseTimings({ leaseDurationMs: 20_000 })).toThrow(
      'leader election: leaseDurationMs (20000) must be greater than renewDeadlineMs (20000)',
    );
  });

  test('refuse a duration a timer cannot wait for', () => {
    expect(() => leaseTimings({ leaseDurationMs: MAX_TIMEOUT_MS + 1 })).toThrow(
      /leaseDurationMs must be a positive number of milliseconds up to 2147483647/,
    );
    expect(() => leaseTimings({ renewDeadlineMs: Number.POSITIVE_INFINITY })).toThrow(
      /renewDeadlineMs must be a positive number/,
    );
  });
});

describe('whether a leader still leads', () => {
  test('until the renew deadline has passed since the start of its last successful renewal', () => {
    const renewedAt = clock.now();
    clock.advance(DEFAULTS.renewDeadlineMs - 1);
    expect(stillLeading(renewedAt, DEFAULTS.renewDeadlineMs, clock.now())).toBe(true);
    clock.advance(1);
    expect(stillLeading(renewedAt, DEFAULTS.renewDeadlineMs, clock.now())).toBe(false);
  });
});

describe('how long one attempt may wait for the API server', () => {
  test('half the renew deadline, so a request stuck on a dead connection leaves time for a fresh one', () => {
    expect(attemptTimeoutMs(20_000)).toBe(10_000);
    expect(renewAttemptMs(clock.now(), 20_000, clock.now())).toBe(10_000);
  });

  test('at least 1 s, but never more than the renew deadline', () => {
    expect(attemptTimeoutMs(1_500)).toBe(1_000);
    expect(attemptTimeoutMs(400)).toBe(400);
  });

  test('never past the renew deadline', () => {
    const renewedAt = clock.now();
    clock.advance(15_000);
    expect(renewAttemptMs(renewedAt, 20_000, clock.now())).toBe(5_000);
    clock.advance(6_000);
    expect(renewAttemptMs(renewedAt, 20_000, clock.now())).toBe(0);
  });
});

describe('when the next renewal attempt starts', () => {
  test('a retry period after a success', () => {
    const at = clock.now();
    expect(untilNextRenewalMs({ startedAt: at, renewed: true }, at, DEFAULTS, clock.now())).toBe(
      2_000,
    );
  });

  test('at once after an attempt that timed out', () => {
    const renewedAt = clock.now();
    clock.advance(2_000);
    const attempt: RenewAttempt = { startedAt: clock.now(), renewed: false };
    clock.advance(attemptTimeoutMs(DEFAULTS.renewDeadlineMs));
    expect(untilNextRenewalMs(attempt, renewedAt, DEFAULTS, clock.now())).toBe(0);
  });

  test('after a quick failure, once a retry period has passed since that attempt started', () => {
    const renewedAt = clock.now();
    clock.advance(2_000);
    const attempt: RenewAttempt = { startedAt: clock.now(), renewed: false };
    clock.advance(30);
    expect(untilNextRenewalMs(attempt, renewedAt, DEFAULTS, clock.now())).toBe(1_970);
  });

  test('never past the renew deadline', () => {
    const renewedAt = clock.now();
    clock.advance(19_000);
    expect(
      untilNextRenewalMs(
        { startedAt: clock.now(), renewed: false },
        renewedAt,
        DEFAULTS,
        clock.now(),
      ),
    ).toBe(1_000);
  });
});

/**
 * A leader renewing by these rules against an API server that freezes at `freezeAt` for `freezeMs`:
 * requests answer after `answerMs`, except that one the server has not answered when it freezes waits
 * for the thaw (as a SIGSTOPped process's socket does). Returns whether it still led `settleMs` after the thaw.
 */
function leadsThroughFreeze(
  timings: LeaseTimings,
  freezeAt: number,
  freezeMs: number,
  answerMs = 100,
  settleMs = 30_000,
): boolean {
  const thaw = freezeAt + freezeMs;
  let lastRenewal = clock.now();
  let last: RenewAttempt = { startedAt: lastRenewal, renewed: true };
  while (clock.now() < thaw + settleMs) {
    clock.advance(untilNextRenewalMs(last, lastRenewal, timings, clock.now()));
    const startedAt = clock.now();
    if (!stillLeading(lastRenewal, timings.renewDeadlineMs, startedAt)) return false;
    const limit = renewAttemptMs(lastRenewal, timings.renewDeadlineMs, startedAt);
    const frozen = startedAt < thaw && startedAt + answerMs > freezeAt;
    const answeredAfter = (frozen ? thaw - startedAt : 0) + answerMs;
    last = { startedAt, renewed: answeredAfter <= limit };
    clock.advance(Math.min(answeredAfter, limit));
    if (last.renewed) lastRenewal = startedAt;
  }
  return true;
}

describe('a leader on the default timings', () => {
  // Freezes starting at every 250 ms of the 2 s between renewals, including just as one is sent.
  const phases = Array.from({ length: 9 }, (_, i) => i * 250);

  test.each(phases)(
    'keeps leading through a 10 s API server freeze that starts %i ms after a renewal',
    (phase) => {
      expect(leadsThroughFreeze(DEFAULTS, clock.now() + phase, 10_000)).toBe(true);
    },
  );

  test.each(phases)(
    'keeps leading when the server takes 5 s to answer after a 10 s freeze that starts %i ms after a renewal',
    (phase) => {
      expect(leadsThroughFreeze(DEFAULTS, clock.now() + phase, 10_000, 5_000)).toBe(true);
    },
  );

  test('gives up during a freeze longer than the renew deadline', () => {
    expect(
      leadsThroughFreeze(DEFAULTS, clock.now() + 1_000, DEFAULTS.renewDeadlineMs + 1_000),
    ).toBe(false);
  });

  test('would not have survived a 10 s freeze on the former 15 s / 10 s / 2 s', () => {
    const former = leaseTimings({
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    });
    expect(leadsThroughFreeze(former, clock.now() + 2_000, 10_000)).toBe(false);
  });
});
