import { systemClock, type Clock } from '../clock/clock.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import { withDeadline } from './lease-deadline.js';
import { isConflict, LeaseApi } from './lease-api.js';
import {
  attemptTimeoutMs,
  leaseTimings,
  renewAttemptMs,
  stillLeading,
  untilNextRenewalMs,
  type LeaseTimings,
  type RenewAttempt,
} from './lease-renewal.js';
import {
  heldByAnother,
  holderToAnnounce,
  leaseHeldBy,
  leaseHolder,
  leaseReleased,
  leaseSpecKey,
  untilNextAttemptMs,
  type Lease,
  type LeaseObservation,
} from './lease-record.js';

// The Lease record goes with the elector for its callers (and specs that write Leases themselves).
export { formatMicroTime, type Lease, type LeaseSpec } from './lease-record.js';

import type {
  LeaderElectionOptions,
  LeadershipCallbacks,
  StopOptions,
} from './leader-election-options.js';

export type {
  LeaderElectionOptions,
  LeadershipCallbacks,
  StopOptions,
} from './leader-election-options.js';

/**
 * Leader election over a `coordination.k8s.io/v1` Lease, with the semantics of client-go's
 * `leaderelection` package: at most one replica leads as long as the replicas' clocks run at
 * about the same rate (no synchronisation needed: expiry is judged from when each replica itself
 * last saw the Lease change, never from the times written in it).
 *
 * ```ts
 * const elector = new LeaderElector({ client, namespace: 'ops', name: 'my-operator', identity: `${pod}-${suffix}` });
 * void elector.run({ onStartedLeading: () => operator.start(), onStoppedLeading: () => operator.stop() });
 * process.once('SIGTERM', () => void elector.stop());
 * ```
 */
export class LeaderElector {
  private readonly api: LeaseApi;
  private readonly namespace: string;
  private readonly name: string;
  /** `<namespace>/<name>`, for log lines. */
  private readonly leaseName: string;
  private readonly identity: string;
  private readonly coordinatesShards: boolean;
  private readonly timings: LeaseTimings;
  /** How long one request may wait for the API server (see {@link attemptTimeoutMs}). */
  private readonly attemptMs: number;
  private readonly logger: Logger;
  private readonly clock: Clock;

  private leading = false;
  private stopped = false;
  private releaseOnExit = true;
  /** Aborts the current campaign's waits and requests. */
  private controller: AbortController | undefined;
  private running: Promise<void> | undefined;
  /** The last Lease this replica read or wrote (its resourceVersion is what a PUT must carry). */
  private observed: Lease | undefined;
  /** The spec of {@link observed}, serialised, to notice changes. */
  private observedSpec = '';
  /** When this replica last saw the spec change, by its own clock. */
  private observedAt = 0;
  /** The other replica this one last said it stands by for ('' before it said any). */
  private announcedHolder = '';

  constructor(options: LeaderElectionOptions) {
    this.timings = leaseTimings(options);
    this.attemptMs = attemptTimeoutMs(this.timings.renewDeadlineMs);
    for (const field of ['namespace', 'name', 'identity'] as const) {
      if (!options[field]) throw new Error(`leader election: ${field} must not be empty`);
    }
    this.api = new LeaseApi(options.client, options.namespace, options.name, this.attemptMs);
    this.namespace = options.namespace;
    this.name = options.name;
    this.leaseName = `${options.namespace}/${options.name}`;
    this.coordinatesShards = options.coordinatesShards ?? false;
    this.identity = options.identity;
    this.clock = options.clock ?? systemClock;
    // `replica`, not `identity`: the operator's identity (its annotation prefix) is another thing.
    this.logger = (options.logger ?? silentLogger()).child({
      lease: `${options.namespace}/${options.name}`,
      replica: options.identity,
    });
  }

  /** The current holder as last seen ('' when free, undefined before the Lease was first read). */
  get holder(): string | undefined {
    return this.observed ? leaseHolder(this.observed) : undefined;
  }

  /** True while this replica holds the Lease and has renewed it within the renew deadline. */
  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until {@link stop}: acquires the Lease when it is free or expired, then renews it
   * every retry period. A leader that cannot renew within the renew deadline, or finds the Lease
   * taken, stops leading at once (calling `onStoppedLeading`) and the promise resolves; it does
   * not campaign again. API errors are logged and retried, never thrown. Resolves after `stop()` too.
   */
  run(callbacks: LeadershipCallbacks): Promise<void> {
    if (this.running) return Promise.reject(new Error('LeaderElector.run() is already running'));
    if (this.stopped) return Promise.resolve();
    const controller = new AbortController();
    this.controller = controller;
    this.running = this.campaign(callbacks, controller).finally(() => {
      this.controller = undefined;
      this.running = undefined;
    });
    return this.running;
  }

  /**
   * Stops campaigning for good. If leading, releases the Lease (unless `release: false`): clears
   * `holderIdentity`, sets `leaseDurationSeconds` to 1 and `renewTime` to now, so a successor takes
   * over at once; then calls `onStoppedLeading`. Resolves once `run()` has finished.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.releaseOnExit = options.release ?? true;
    }
    this.controller?.abort();
    await this.running;
  }

  private async campaign(
    callbacks: LeadershipCallbacks,
    controller: AbortController,
  ): Promise<void> {
    const signal = controller.signal;
    const acquiredAt = await this.acquire(signal);
    if (acquiredAt === undefined) return;
    this.leading = true;
    const previous = this.announcedHolder;
    this.logger.info(
      { previousHolder: previous || undefined },
      previous
        ? `took over the Lease ${this.leaseName} from ${previous}: leading`
        : `acquired the Lease ${this.leaseName}: leading`,
    );
    // Not awaited: the Lease must be renewed while the callback starts (or runs) the real work.
    void Promise.resolve()
      .then(() => callbacks.onStartedLeading())
      .catch((error: unknown) => {
        this.logger.error({ err: error }, 'onStartedLeading failed: stepping down');
        controller.abort();
      });

    const outcome = await this.renew(signal, acquiredAt);
    this.leading = false;
    if (outcome === 'aborted') {
      if (this.releaseOnExit) await this.release();
      this.logger.info('stopped leading');
    } else {
      this.logger.warn(
        outcome === 'taken'
          ? 'the lease was taken over: stopped leading'
          : 'could not renew the lease in time: stopped leading',
      );
    }
    try {
      await callbacks.onStoppedLeading();
    } catch (error) {
      this.logger.error({ err: error }, 'onStoppedLeading failed');
    }
  }

  /** Tries every retry period until the Lease is ours; resolves with the start of the winning attempt, or undefined once aborted. */
  private async acquire(signal: AbortSignal): Promise<number | undefined> {
    for (;;) {
      const startedAt = this.clock.now();
      try {
        if (
          await withDeadline(this.clock, signal, this.attemptMs, (bounded) =>
            this.tryAcquireOrRenew(bounded),
          )
        )
          return startedAt;
        this.announceStandby();
      } catch (error) {
        if (signal.aborted) return undefined;
        this.logger.warn({ err: error }, 'could not acquire the lease; retrying');
      }
      if (!(await this.pause(this.untilNextAttempt(), signal))) return undefined;
    }
  }

  /**
   * Says that this replica stands by and who leads, once per leader: a replica waiting without a
   * word looks like a hung operator (or hides that an unrelated operator holds the same Lease).
   */
  private announceStandby(): void {
    const holder = holderToAnnounce(
      leaseHolder(this.observed),
      this.identity,
      this.announcedHolder,
    );
    if (holder === undefined) return;
    this.announcedHolder = holder;
    this.logger.info({ holder }, `standing by, leader is ${holder} (Lease ${this.leaseName})`);
  }

  /** How long to wait before the next attempt to acquire (see {@link untilNextAttemptMs}). */
  private untilNextAttempt(): number {
    return untilNextAttemptMs(
      this.seen(),
      this.identity,
      this.timings.leaseDurationMs,
      this.timings.retryPeriodMs,
      this.clock.now(),
    );
  }

  /** Waits `ms`; false when aborted first. The clock's timer is cleared on abort, so nothing keeps the process alive. */
  private async pause(ms: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    await this.clock.sleep(ms, signal); // resolves (never rejects) on abort
    return !signal.aborted;
  }

  /**
   * Renews every retry period until aborted, out of time or the Lease is seen held by another replica.
   * Out of time means the renew deadline has passed since the start of the last successful renewal
   * (see {@link stillLeading}); until then, failed or hung attempts are retried, so an API server
   * that stalls for less costs nothing.
   */
  private async renew(
    signal: AbortSignal,
    renewedAt: number,
  ): Promise<'aborted' | 'expired' | 'taken'> {
    const deadlineMs = this.timings.renewDeadlineMs;
    let lastRenewal = renewedAt;
    let last: RenewAttempt = { startedAt: renewedAt, renewed: true };
    let failures = 0;
    for (;;) {
      if (
        !(await this.pause(
          untilNextRenewalMs(last, lastRenewal, this.timings, this.clock.now()),
          signal,
        ))
      )
        return 'aborted';
      // The attempt's start, not its end, counts: the write may have landed any time after it.
      const startedAt = this.clock.now();
      if (!stillLeading(lastRenewal, deadlineMs, startedAt)) return 'expired';
      last = { startedAt, renewed: false };
      try {
        if (
          await withDeadline(
            this.clock,
            signal,
            renewAttemptMs(lastRenewal, deadlineMs, startedAt),
            (bounded) => this.tryAcquireOrRenew(bounded),
          )
        ) {
          if (failures > 0) {
            const sinceLastRenewalMs = this.clock.now() - lastRenewal;
            this.logger.info(
              { failedAttempts: failures, sinceLastRenewalMs },
              `renewed the lease again, ${sinceLastRenewalMs} ms after the last renewal: still leading`,
            );
          }
          [lastRenewal, last, failures] = [startedAt, { startedAt, renewed: true }, 0];
          continue;
        }
        if (leaseHolder(this.observed) !== this.identity) return 'taken';
      } catch (error) {
        if (signal.aborted) return 'aborted';
        this.logger.warn(
          { err: error, renewDeadlineMs: deadlineMs },
          'could not renew the lease; retrying until the renew deadline',
        );
      }
      failures++;
    }
  }

  /**
   * One attempt, as client-go's `tryAcquireOrRenew`: true when the Lease is now ours, false when
   * another replica holds it or won a race; throws on API errors.
   */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const now = this.clock.now();
    // A leader renews from its cached copy, saving a GET; a conflict means the cache is stale.
    if (this.leading && this.observed && leaseHolder(this.observed) === this.identity) {
      try {
        this.observe(await this.api.write('PUT', this.nextLease(this.observed, now), signal), now);
        return true;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }

    let lease = await this.api.read(signal);
    // Expiry counts from when the answer came, not when it was asked for: a slow read may show a renewal
    // that landed well after it was sent.
    let seenAt = this.clock.now();
    if (!lease) {
      try {
        this.observe(
          await this.api.write(
            'POST',
            this.nextLease({ metadata: { name: this.name, namespace: this.namespace } }, now),
            signal,
          ),
          now,
        );
        return true;
      } catch (error) {
        if (!isConflict(error)) throw error;
        // Another replica created it first.
        lease = await this.api.read(signal);
        seenAt = this.clock.now();
        if (!lease) return false;
      }
    }
    this.observe(lease, seenAt);
    if (heldByAnother(this.seen(), this.identity, this.timings.leaseDurationMs, this.clock.now()))
      return false;
    try {
      this.observe(await this.api.write('PUT', this.nextLease(lease, now), signal), now);
      return true;
    } catch (error) {
      if (isConflict(error)) return false; // lost the race to another replica
      throw error;
    }
  }

  /** The Lease as this replica writes it to acquire or renew. */
  private nextLease(current: Lease, now: number): Lease {
    const { identity, timings, coordinatesShards } = this;
    return leaseHeldBy(current, identity, timings.leaseDurationMs, now, coordinatesShards);
  }

  /** Gives the Lease up after leading, as client-go's `release`; failures are logged, not thrown. */
  private async release(): Promise<void> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const released = await withDeadline(
          this.clock,
          undefined,
          this.attemptMs,
          async (signal) => {
            // The cached copy first; after a conflict (say, an aborted renewal that landed anyway), a fresh one.
            const lease = attempt === 0 ? this.observed : await this.api.read(signal);
            if (lease?.spec?.holderIdentity !== this.identity) return false;
            this.observe(
              await this.api.write('PUT', leaseReleased(lease, this.clock.now()), signal),
              this.clock.now(),
            );
            return true;
          },
        );
        this.logger.info(
          released ? 'released the lease' : 'the lease is no longer ours: nothing to release',
        );
        return;
      } catch (error) {
        if (!isConflict(error) || attempt > 0) {
          this.logger.warn({ err: error }, 'could not release the lease; it will expire instead');
          return;
        }
      }
    }
  }

  /** Records a Lease read or written at `now`; the observed time moves only when the spec changed. */
  private observe(lease: Lease, now: number): void {
    const key = leaseSpecKey(lease.spec);
    if (key !== this.observedSpec) {
      this.observedSpec = key;
      this.observedAt = now;
    }
    this.observed = lease;
  }

  /** The Lease as last seen, for the pure decisions of lease-record.ts. */
  private seen(): LeaseObservation {
    return { holder: leaseHolder(this.observed), observedAt: this.observedAt };
  }
}
