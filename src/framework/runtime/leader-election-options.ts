import type { ApiClient } from '../api/api-client.js';
import type { Clock } from '../clock/clock.js';
import type { Logger } from '../observability/logger.js';

/** Options for {@link LeaderElector}. Durations default to 30 s / 20 s / 2 s (see lease-renewal.ts for why). */
export interface LeaderElectionOptions {
  client: ApiClient;
  /** Namespace of the Lease. */
  namespace: string;
  /** Name of the Lease; every replica of one operator uses the same. */
  name: string;
  /** This replica's id, unique among the replicas (e.g. pod name plus a random suffix). */
  identity: string;
  /**
   * How long non-leaders wait after the last change they saw to the Lease before taking it over.
   * Judged by each replica's own clock and setting, so every replica should use the same value.
   * Default 30 000 ms.
   */
  leaseDurationMs?: number;
  /**
   * How long after the start of its last successful renewal a leader keeps trying before it gives up
   * leading: an API server stall shorter than this minus a retry period costs nothing. Must be below
   * the lease duration, which leaves the difference for the work to stop. Default 20 000 ms.
   */
  renewDeadlineMs?: number;
  /** The pause between attempts to acquire or renew. Default 2 000 ms. */
  retryPeriodMs?: number;
  /**
   * The holder coordinates a sharding ring: the Lease says so (an annotation), and replicas with
   * sharding on wait while any other holds it. Default false.
   */
  coordinatesShards?: boolean;
  /** Default: {@link silentLogger}. */
  logger?: Logger;
  /**
   * The clock the elector reads and waits by (between attempts, and for a request's deadline).
   * Default {@link systemClock}; specs pass a virtual one.
   */
  clock?: Clock;
}

/** What a {@link LeaderElector} calls as it gains and loses leadership. */
export interface LeadershipCallbacks {
  /**
   * Called once leadership is acquired. Renewals go on while it runs, so it may start long-lived
   * work and return; if it throws or rejects, the elector steps down (releasing the Lease).
   */
  onStartedLeading(): void | Promise<void>;
  /** Called once when leadership is lost or released; `run()` resolves after it settles. */
  onStoppedLeading(): void | Promise<void>;
}

/** Options for {@link LeaderElector.stop}. */
export interface StopOptions {
  /**
   * Release the Lease so that a successor can take over at once. Default true. `false` leaves
   * the Lease to expire, as if the process had died (for tests and crash-like shutdowns).
   */
  release?: boolean;
}
