import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import { LEASES, namespacedCollectionPath } from '../api/resource.js';
import { systemClock, type Clock } from '../clock/clock.js';
import type { Logger } from '../observability/logger.js';
import {
  ringPrefixOf,
  ringView,
  sightMembers,
  type MemberLease,
  type MemberSighting,
} from '../sharding/ring-membership.js';
import { LeaseApi } from './lease-api.js';
import { attemptTimeoutMs, type LeaseTimings } from './lease-renewal.js';
import {
  heldByShardCoordinator,
  holderToAnnounce,
  leaseHolder,
  type Lease,
} from './lease-record.js';

/**
 * Replicas with sharding on and replicas without it never work at once, so a rollout that switches
 * sharding on or off runs no handler twice. Each side writes its own Lease before it reads the other's
 * (a leader without sharding its leader Lease, a sharded replica its member Lease), and reads are
 * consistent, so of two replicas starting together at least one sees the other, and waits.
 */

/** Where an operator's Leases are, for {@link untilNoShardMembers} and {@link untilNoUnshardedLeader}. */
export interface ShardingSwitchOptions {
  /** For the Leases. */
  client: ApiClient;
  namespace: string;
  /** The leader Lease's name; the member Leases are named after it. */
  leaderLease: string;
  /** The Leases' timings: a member Lease unchanged for the lease duration is gone; reads come every retry period. */
  timings: LeaseTimings;
  logger: Logger;
  clock?: Clock;
}

/**
 * The members whose Lease a leader without sharding waits for: held, and seen changing within the lease
 * duration (a Lease seen once counts until a lease duration has passed: its holder may still renew it).
 */
export function membersStillHolding(
  sightings: ReadonlyMap<string, MemberSighting>,
  now: number,
  leaseDurationMs: number,
): string[] {
  const { live, pending } = ringView(sightings, now, leaseDurationMs);
  return [...live, ...pending].sort();
}

/** Whether a sharded replica may work with the leader Lease as read: free, or held by a coordinator. */
export function shardsMayWork(leader: Lease | undefined): boolean {
  return leaseHolder(leader) === '' || heldByShardCoordinator(leader);
}

/**
 * For a leader without sharding, before it works: resolves true once no replica holds a member Lease
 * of this operator's ring (released, removed, or unchanged for a lease duration), or at once when the
 * Leases cannot be listed (forbidden: then no replica of this operator shards either); false when
 * `signal` aborts first.
 */
export async function untilNoShardMembers(
  options: ShardingSwitchOptions,
  signal: AbortSignal,
): Promise<boolean> {
  const { client, namespace, leaderLease, timings, logger, clock = systemClock } = options;
  const prefix = ringPrefixOf(leaderLease);
  const path = namespacedCollectionPath(LEASES, namespace);
  let sightings = new Map<string, MemberSighting>();
  let announced = '';
  let failing = false;
  while (!signal.aborted) {
    try {
      const list = await client.request<{ items?: MemberLease[] }>('GET', path, {
        signal,
        timeoutMs: attemptTimeoutMs(timings.renewDeadlineMs),
      });
      failing = false;
      // Sighted when the answer came: a renewal may have landed while the listing was under way, and
      // a member must never be taken for gone before it has stopped.
      const answeredAt = clock.now();
      sightings = sightMembers(sightings, list.items ?? [], prefix, answeredAt);
      const holding = membersStillHolding(sightings, answeredAt, timings.leaseDurationMs);
      if (holding.length === 0) {
        if (announced !== '')
          logger.info('no replica with sharding on holds a member Lease now: starting work');
        return true;
      }
      if (holding.join(',') !== announced) {
        announced = holding.join(',');
        logger.warn(
          { members: holding.slice(0, 10), count: holding.length },
          `waiting to start: ${holding.length} replica(s) with sharding on hold member Leases (${prefix}…) in ${namespace}. ` +
            'This replica leads without sharding and starts once they are gone; set sharding alike on every replica (a rollout that switches it finishes by itself)',
        );
      }
    } catch (error) {
      if (signal.aborted) return false;
      if (error instanceof ApiError && error.status === 403) {
        logger.warn(
          { namespace },
          'cannot list Leases (forbidden), so cannot tell whether replicas with sharding on still work: starting work. Grant list on leases in this namespace (konductor manifests does)',
        );
        return true;
      }
      if (!failing)
        logger.warn(
          { err: error instanceof Error ? error.message : String(error), namespace },
          'cannot list Leases to look for replicas with sharding on; retrying before starting work',
        );
      failing = true;
    }
    await clock.sleep(timings.retryPeriodMs, signal);
  }
  return false;
}

/**
 * For a sharded replica that holds its member Lease, before it works: resolves true once the leader
 * Lease is free or held by a replica that coordinates the ring (never while a replica without sharding
 * leads: it handles every object); false when `signal` aborts first.
 */
export async function untilNoUnshardedLeader(
  options: ShardingSwitchOptions,
  signal: AbortSignal,
): Promise<boolean> {
  const { client, namespace, leaderLease, timings, logger, clock = systemClock } = options;
  const api = new LeaseApi(
    client,
    namespace,
    leaderLease,
    attemptTimeoutMs(timings.renewDeadlineMs),
  );
  let announced = '';
  let failing = false;
  while (!signal.aborted) {
    try {
      const leader = await api.read(signal);
      failing = false;
      if (shardsMayWork(leader)) {
        if (announced !== '')
          logger.info('no replica without sharding leads now: handling its shard');
        return true;
      }
      const holder = holderToAnnounce(leaseHolder(leader), '', announced);
      if (holder !== undefined) {
        announced = holder;
        logger.warn(
          { holder },
          `waiting to handle its shard: ${holder} leads without sharding (Lease ${namespace}/${leaderLease}). ` +
            'This replica starts once the Lease is free or held by a replica with sharding on; set sharding alike on every replica (a rollout that switches it finishes by itself)',
        );
      }
    } catch (error) {
      if (signal.aborted) return false;
      if (!failing)
        logger.warn(
          { err: error instanceof Error ? error.message : String(error) },
          `cannot read the leader Lease ${namespace}/${leaderLease}; retrying before handling its shard`,
        );
      failing = true;
    }
    await clock.sleep(timings.retryPeriodMs, signal);
  }
  return false;
}
