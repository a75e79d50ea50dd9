import { MAX_TIMEOUT_MS } from '../clock/long-timeout.js';

/**
 * The timing rules of leader election, pure: the defaults, which settings are consistent, whether a
 * leader may still lead, how long one attempt may wait for the API server, and when the next starts.
 * The elector loop (leader-election.ts) does the I/O and the waiting.
 *
 * Safety: another replica takes the Lease over only after the lease duration has passed, by its own
 * clock, since it saw our last write, which landed no earlier than the start of that attempt. A leader
 * that stops once the renew deadline has passed since that start therefore stops before anyone may
 * take over, with leaseDuration − renewDeadline to spare for stopping its work and for clocks that
 * run at slightly different rates.
 */

/**
 * 30 s / 20 s / 2 s rather than controller-runtime's 15 s / 10 s / 2 s: a leader must outlast an API
 * server that stalls (a CPU-starved control plane, a slow etcd) for about 10 s. It last renewed up to
 * a retry period before the stall began and needs a moment after it ends, so a 10 s renew deadline
 * always gave up; 20 s leaves about 8 s to spare. The lease duration keeps 10 s of margin beyond the
 * renew deadline for the work to stop; a crashed leader is replaced within about 35 s.
 */
export const DEFAULT_LEASE_DURATION_MS = 30_000;
export const DEFAULT_RENEW_DEADLINE_MS = 20_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;

/** client-go's JitterFactor: the renew deadline must leave room for more than one retry. */
const JITTER_FACTOR = 1.2;
/** The shortest time an attempt may wait for an answer, as controller-runtime's Lease client (max(renewDeadline/2, 1 s)). */
const MIN_ATTEMPT_MS = 1_000;

/** The durations of leader election, in milliseconds. */
export interface LeaseTimings {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/**
 * The timings with defaults filled in, checked: each a positive number of milliseconds that a timer
 * can wait for, and leaseDuration > renewDeadline > 1.2 × retryPeriod. Throws naming what to change.
 */
export function leaseTimings(options: Partial<LeaseTimings>): LeaseTimings {
  const timings: LeaseTimings = {
    leaseDurationMs: options.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS,
    renewDeadlineMs: options.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS,
    retryPeriodMs: options.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS,
  };
  for (const [field, value] of Object.entries(timings)) {
    if (!Number.isFinite(value) || value <= 0 || value > MAX_TIMEOUT_MS) {
      throw new Error(
        `leader election: ${field} must be a positive number of milliseconds up to ${MAX_TIMEOUT_MS} (about 24.8 days), got ${value}`,
      );
    }
  }
  const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = timings;
  if (leaseDurationMs <= renewDeadlineMs) {
    throw new Error(
      `leader election: leaseDurationMs (${leaseDurationMs}) must be greater than renewDeadlineMs (${renewDeadlineMs})`,
    );
  }
  if (renewDeadlineMs <= JITTER_FACTOR * retryPeriodMs) {
    throw new Error(
      `leader election: renewDeadlineMs (${renewDeadlineMs}) must be greater than ${JITTER_FACTOR} × retryPeriodMs (${retryPeriodMs})`,
    );
  }
  return timings;
}

/**
 * Whether a leader may still act at `now`: the renew deadline has not yet passed since the start of
 * its last successful renewal (the start, as the write may have landed any time after it).
 */
export function stillLeading(lastRenewalAt: number, renewDeadlineMs: number, now: number): boolean {
  return now < lastRenewalAt + renewDeadlineMs;
}

/**
 * How long one attempt may wait for the API server: half the renew deadline, at least 1 s (never
 * more than the renew deadline). A request stuck on a dead connection is given up while there is
 * time left for a fresh one, yet a server that is merely slow still gets to answer.
 */
export function attemptTimeoutMs(renewDeadlineMs: number): number {
  return Math.min(renewDeadlineMs, Math.max(renewDeadlineMs / 2, MIN_ATTEMPT_MS));
}

/** How long a renewal attempt starting at `now` may wait: {@link attemptTimeoutMs}, but never past the renew deadline. */
export function renewAttemptMs(
  lastRenewalAt: number,
  renewDeadlineMs: number,
  now: number,
): number {
  return Math.max(
    0,
    Math.min(attemptTimeoutMs(renewDeadlineMs), lastRenewalAt + renewDeadlineMs - now),
  );
}

/** The last renewal attempt of a leader: when it started and whether it renewed the Lease. */
export interface RenewAttempt {
  startedAt: number;
  renewed: boolean;
}

/**
 * How long a leader waits before its next renewal attempt: a retry period after a success; after a
 * failure, until a retry period after that attempt started, so one that timed out is followed at
 * once (the API server may be answering again) while quick errors are not retried in a loop. Never
 * past the renew deadline, where the leader gives up.
 */
export function untilNextRenewalMs(
  last: RenewAttempt,
  lastRenewalAt: number,
  timings: LeaseTimings,
  now: number,
): number {
  const pause = last.renewed ? timings.retryPeriodMs : last.startedAt + timings.retryPeriodMs - now;
  return Math.max(0, Math.min(pause, lastRenewalAt + timings.renewDeadlineMs - now));
}
