import type { ApiClient } from '../api/api-client.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { LeaderElector } from './leader-election.js';
import { leaseTimings } from './lease-renewal.js';
import { untilNoShardMembers } from './sharding-switch.js';
import type { OperatorOptions, OperatorTimings } from './operator-options.js';
import { defaultReplicaIdentity } from './replica-identity.js';
import type { WatchHub } from '../watching/watch-hub.js';
import type { RouteTable } from './route-table.js';
import type { LiveRing } from './shard-labelling.js';
import { servedCollections } from './shutdown-deletions.js';
import type { OperatorSharding } from './operator-sharding.js';

/** What {@link campaignForWork} needs from the operator. */
export interface Campaign {
  election: OperatorOptions['leaderElection'];
  /** The Lease's name when the options name none (the identity's). */
  leaseName: string;
  timings: OperatorTimings['lease'];
  client: ApiClient;
  logger: Logger;
  metrics: Metrics;
  /** Starts the work; false when it did not (the operator is stopping). */
  startWork: () => boolean;
  /** Stops all work after this replica (`identity`) lost leadership. */
  stopWork: (identity: string) => Promise<void>;
  /** With sharding (`OperatorOptions.sharding`): what the replica shards. */
  sharding?: ShardingCampaign;
}

/** What a sharded replica needs besides the Leases: its shard labels' prefix, its watches and its routes. */
export interface ShardingCampaign {
  prefix: string;
  /** The client for the objects (labels, drains); the campaign's own is for Leases. */
  client: ApiClient;
  /** Where the ring's live members are kept for the labelling webhook. */
  ring?: LiveRing;
  hub: WatchHub;
  table: RouteTable;
  namespaces: readonly string[] | undefined;
}

/** What the operator holds of its campaign: who holds its Lease, whether it does, and how to give it up. */
export type Elected = Pick<LeaderElector, 'holder' | 'isLeader' | 'stop'> & {
  /** With sharding: the label selector of this replica's own objects, once it joined the ring. */
  readonly shardSelector?: string;
};

/**
 * Starts the work at once without leader election, or each time this replica wins the Lease; the
 * `leader` gauge says which replica works. With sharding, every replica works on its own shard once it
 * holds its member Lease, and the leader Lease's holder coordinates. Returns the elector, if any.
 */
export function campaignForWork(campaign: Campaign): Elected | undefined {
  const { election, logger, metrics } = campaign;
  if (election && campaign.sharding) return joinShards(campaign, election, campaign.sharding);
  if (!election) {
    metrics.set('leader', 1);
    campaign.startWork();
    return undefined;
  }
  metrics.set('leader', 0);
  const identity = election.identity ?? defaultReplicaIdentity();
  const name = election.name ?? campaign.leaseName;
  const timings = leaseTimings(campaign.timings);
  const elector = new LeaderElector({
    namespace: election.namespace,
    name,
    identity,
    ...timings,
    client: campaign.client,
    logger,
  });
  let working = false;
  let waiting: AbortController | undefined;
  void elector.run({
    onStartedLeading: async () => {
      // Not while replicas with sharding on still work (a rollout switching it off): they handle the objects.
      waiting = new AbortController();
      const signal = waiting.signal;
      const options = { client: campaign.client, namespace: election.namespace, timings, logger };
      if (!(await untilNoShardMembers({ ...options, leaderLease: name }, signal))) return;
      if (!elector.isLeader || !campaign.startWork()) return;
      logger.info({ identity }, 'leading: starting work');
      metrics.set('leader', 1);
      working = true;
    },
    onStoppedLeading: async () => {
      waiting?.abort();
      working = false;
      metrics.set('leader', 0);
      await campaign.stopWork(identity);
    },
  });
  return {
    get holder() {
      return elector.holder;
    },
    // Leading while waiting for sharded replicas is standing by: ready, with nothing to list.
    get isLeader() {
      return working && elector.isLeader;
    },
    stop: (options) => elector.stop(options),
  };
}

/**
 * Joins the sharding ring: this replica's routes select its shard, and its member Lease starts the work.
 * The sharding code is loaded only here, so an operator without sharding does not hold it in memory
 * (but for the ring's Lease names and sightings, with which its leader looks for sharded replicas).
 */
function joinShards(
  campaign: Campaign,
  election: NonNullable<Campaign['election']>,
  { prefix, client, ring, hub, table, namespaces }: ShardingCampaign,
): Elected {
  const replica = election.identity ?? defaultReplicaIdentity();
  let sharding: OperatorSharding | undefined;
  let stopped = false;
  const joining = import('./operator-sharding.js').then(({ OperatorSharding }) => {
    if (stopped) return;
    const joined = new OperatorSharding({
      prefix,
      namespace: election.namespace,
      leaderLease: election.name ?? campaign.leaseName,
      replica,
      timings: campaign.timings,
      client,
      leaseClient: campaign.client,
      hub,
      logger: campaign.logger,
      metrics: campaign.metrics,
      collections: () => servedCollections(table.routes, namespaces),
      countObjects: () => table.objectCount(),
      ring,
      inherit: (selectors) => table.inheritShards(selectors),
      runGrownShare: () => table.runInheritedShare(),
      inheritedListed: (selectors, signal) => table.inheritedListed(selectors, signal),
      watchQuiet: (selectors) => table.watchQuietMembers(selectors),
    });
    table.joinShard(joined.member);
    joined.start({ startWork: campaign.startWork, stopWork: () => campaign.stopWork(replica) });
    sharding = joined;
  });
  return {
    get holder() {
      return sharding?.holder;
    },
    get isLeader() {
      return sharding?.isLeader ?? false;
    },
    get shardSelector() {
      return sharding?.member.selector;
    },
    stop: async () => {
      stopped = true;
      await joining;
      await sharding?.stop();
    },
  };
}
