import type { ApiClient } from '../api/api-client.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { memberNameOf } from '../sharding/ring.js';
import { quietToWatch, ringPrefixOf, type RingView } from '../sharding/ring-membership.js';
import type { Succession } from '../sharding/succession.js';
import { MemberLeases } from '../sharding/member-leases.js';
import { RingWatch } from '../sharding/ring-watch.js';
import { ShardCoordinator } from '../sharding/shard-coordinator.js';
import type { ShardedCollection } from '../sharding/sharded-collection.js';
import { ShardLabels } from '../sharding/shard-labels.js';
import { ShardMember } from '../sharding/shard-member.js';
import type { WatchHub } from '../watching/watch-hub.js';
import type { LiveRing } from './shard-labelling.js';
import { LeaderElector } from './leader-election.js';
import { leaseTimings, type LeaseTimings } from './lease-renewal.js';
import { untilNoUnshardedLeader } from './sharding-switch.js';

/** The longest the coordinator waits for this replica's listing of a departed member's objects as their heir. */
const HEIRS_LISTING_WAIT_MS = 60_000;

/** What {@link OperatorSharding} is built from. */
export interface ShardingSetup {
  /** The operator identity's prefix: the shard labels' prefix. */
  prefix: string;
  /** Where the Leases are. */
  namespace: string;
  /** The leader Lease: held by the coordinating replica; the member Leases are named after it. */
  leaderLease: string;
  /** This replica's name in the Leases. */
  replica: string;
  timings: Partial<LeaseTimings>;
  /** For the objects: labels, drains, listings. */
  client: ApiClient;
  /** For the Leases, on sockets of their own so renewals never wait behind object traffic. */
  leaseClient: ApiClient;
  hub: WatchHub;
  logger: Logger;
  metrics: Metrics;
  /** The handled collections (for the coordinator). */
  collections: () => readonly ShardedCollection[];
  /** Objects this replica's watches hold (for the `shard_objects` gauge). */
  countObjects: () => number;
  /** Kept up to date with the ring's live members, for the labelling webhook. */
  ring?: LiveRing;
  /** Called with the label selectors of the departed members' objects this replica is an heir of, one per member. */
  inherit: (selectors: readonly string[]) => void;
  /** Runs this replica's share of the inherited objects already listed, after its share grew (a dead heir's part). */
  runGrownShare: () => void;
  /** Resolves once every watch of these inherited selectors has listed (they are waited for), or on abort. */
  inheritedListed: (selectors: readonly string[], signal: AbortSignal) => Promise<void>;
  /** Called with the label selectors of the other members whose objects to watch ahead of inheriting them (an empty list closes them). */
  watchQuiet?: (selectors: readonly string[]) => void;
}

/** What the operator does as its membership starts and ends. */
export interface ShardWork {
  /** This replica holds its member Lease: start handling its shard. */
  startWork: () => boolean;
  /** This replica lost its member Lease: stop all work. */
  stopWork: () => Promise<void>;
}

/**
 * One replica of a sharded operator: it holds a member Lease of its own (and handles the objects
 * labelled with its member name while it does), reads the ring of member Leases, and campaigns for the
 * leader Lease, whose holder coordinates: it assigns objects to members and moves them as members come
 * and go. Losing the member Lease stops all work, as losing the leader Lease does without sharding.
 */
export class OperatorSharding {
  readonly member: ShardMember;
  private readonly timings: LeaseTimings;
  private readonly memberElector: LeaderElector;
  private coordinatorElector: LeaderElector | undefined;
  private coordinator: ShardCoordinator | undefined;
  private readonly ring: RingWatch;
  private readonly labels: ShardLabels;
  private readonly prefix: string;
  private inherited: readonly string[] = [];
  private stopping = false;
  private working = false;
  /** Departed members whose listing by this replica, as their heir, the coordinator waited for: once each. */
  private readonly waitedFor = new Set<string>();
  /** Ends the coordinator's wait for that listing when the ring changes: its pass is moot then. */
  private listingWait: AbortController | undefined;

  constructor(private readonly setup: ShardingSetup) {
    this.timings = leaseTimings(setup.timings);
    const memberName = memberNameOf(setup.replica);
    this.labels = new ShardLabels(setup.prefix);
    this.member = new ShardMember(memberName, this.labels, setup.client, setup.logger);
    const prefix = ringPrefixOf(setup.leaderLease);
    this.prefix = prefix;
    this.memberElector = this.elector(`${prefix}${memberName}`);
    this.ring = new RingWatch({
      client: setup.leaseClient,
      namespace: setup.namespace,
      prefix,
      heirsKey: this.labels.heirs,
      leaseDurationMs: this.timings.leaseDurationMs,
      periodMs: this.timings.retryPeriodMs,
      logger: setup.logger,
      metrics: setup.metrics,
      onChange: (ring) => {
        setup.logger.info(
          { members: ring.live, pending: ring.pending },
          `the sharding ring has ${ring.live.length} member(s)`,
        );
        if (setup.ring) setup.ring.members = ring.live;
        this.listingWait?.abort();
        this.inherit(ring.successions);
        this.coordinator?.update(ring);
      },
      onTick: () => {
        setup.metrics.set('shard_objects', setup.countObjects());
        this.coordinator?.refresh();
      },
      onQuiet: (members) => this.watchQuiet(members),
    });
  }

  /** The member Lease's holder as last seen (this replica, once it joined). */
  get holder(): string | undefined {
    return this.memberElector.holder;
  }

  /** Whether this replica handles its shard: it holds its member Lease, and no replica without sharding leads. */
  get isLeader(): boolean {
    return this.working && this.memberElector.isLeader;
  }

  /** Takes the member Lease (then starts the work), reads the ring, and campaigns to coordinate. */
  start(work: ShardWork): void {
    const { logger, metrics, leaseClient: client, namespace, leaderLease } = this.setup;
    metrics.set('leader', 0);
    let waiting: AbortController | undefined;
    void this.memberElector.run({
      onStartedLeading: async () => {
        // Not while a replica without sharding leads (a rollout switching sharding on): it handles every object.
        waiting = new AbortController();
        const options = { client, namespace, leaderLease, timings: this.timings, logger };
        if (!(await untilNoUnshardedLeader(options, waiting.signal))) return;
        if (!this.memberElector.isLeader || !work.startWork()) return;
        logger.info({ member: this.member.member }, 'joined the sharding ring: handling its shard');
        metrics.set('leader', 1);
        this.working = true;
      },
      onStoppedLeading: async () => {
        waiting?.abort();
        this.working = false;
        metrics.set('leader', 0);
        await work.stopWork();
      },
    });
    this.ring.start();
    this.campaign();
  }

  /**
   * Stops coordinating and reading the ring, then releases the member Lease so that the coordinator
   * hands this replica's objects on at once. Called once the work has stopped, as a leader's release.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.coordinatorElector?.stop();
    await this.ring.stop();
    this.setup.watchQuiet?.([]);
    await this.memberElector.stop();
  }

  private campaign(): void {
    if (this.stopping) return;
    const elector = this.elector(this.setup.leaderLease, true);
    this.coordinatorElector = elector;
    void elector
      .run({
        onStartedLeading: () => {
          this.setup.logger.info('coordinating the sharding ring');
          const { leaseClient: client, namespace } = this.setup;
          const { prefix, labels } = this;
          this.coordinator = new ShardCoordinator({
            ...this.setup,
            labels,
            leases: new MemberLeases({ client, namespace, prefix, heirsKey: labels.heirs }),
            onHeirsNamed: () => this.ring.readNow(),
            heirsListed: (successions, stopped) => this.heirsListed(successions, stopped),
          });
          this.coordinator.update(this.ring.ring);
        },
        onStoppedLeading: async () => {
          const coordinator = this.coordinator;
          this.coordinator = undefined;
          await coordinator?.stop();
        },
      })
      // A replica that lost the leader Lease campaigns again: it still handles its shard meanwhile.
      .finally(() => this.campaign());
  }

  /**
   * Resolves once this replica has listed the objects of the departed members it is an heir of and was
   * not waited for yet, or at most {@link HEIRS_LISTING_WAIT_MS} later (a listing that keeps failing must
   * not hold their relabelling back), or when the ring changes or the coordinator stops.
   */
  private async heirsListed(
    successions: ReadonlyMap<string, Succession>,
    stopped: AbortSignal,
  ): Promise<void> {
    for (const departed of this.waitedFor)
      if (!successions.has(departed)) this.waitedFor.delete(departed);
    const departed = [...successions]
      .filter(
        ([member, { heirs }]) => heirs.includes(this.member.member) && !this.waitedFor.has(member),
      )
      .map(([member]) => member);
    if (departed.length === 0) return;
    const wait = new AbortController();
    this.listingWait = wait;
    const timer = setTimeout(() => wait.abort('timeout'), HEIRS_LISTING_WAIT_MS);
    const stop = (): void => wait.abort();
    stopped.addEventListener('abort', stop, { once: true });
    try {
      const selectors = departed.map((member) => this.labels.memberSelector(member));
      await this.setup.inheritedListed(selectors, wait.signal);
      // Listed, or given up on: not waited for again. A ring change or a stop leaves it to the next pass.
      if (!wait.signal.aborted || wait.signal.reason === 'timeout')
        departed.forEach((member) => this.waitedFor.add(member));
    } finally {
      clearTimeout(timer);
      stopped.removeEventListener('abort', stop);
      if (this.listingWait === wait) this.listingWait = undefined;
    }
  }

  /** Watches the departed members' objects this replica is now an heir of (or no longer is). */
  private inherit(successions: RingView['successions']): void {
    const { selectors, grown } = this.member.inherit(successions);
    if (grown) this.setup.runGrownShare();
    if (selectors.join('\n') === this.inherited.join('\n')) return;
    this.inherited = selectors;
    this.setup.logger.info(
      { inheriting: selectors },
      selectors.length > 0
        ? 'handling its share of departed members’ objects until they are relabelled'
        : 'no departed member’s objects left to handle',
    );
    this.setup.inherit(selectors);
  }

  /**
   * Watches the objects of the other members `members` names, ahead of inheriting them: listed before
   * its Lease runs out, a dead member's objects are handled as soon as it does.
   */
  private watchQuiet(members: readonly string[]): void {
    const others = quietToWatch(members, this.member.member);
    if (others.length > 0)
      this.setup.logger.info(
        { members: others },
        'watching the objects of members gone quiet, ahead of inheriting them',
      );
    this.setup.watchQuiet?.(others.map((member) => this.labels.memberSelector(member)));
  }

  private elector(name: string, coordinatesShards = false): LeaderElector {
    const { namespace, replica, leaseClient: client, logger } = this.setup;
    return new LeaderElector({
      namespace,
      name,
      identity: replica,
      ...this.timings,
      coordinatesShards,
      client,
      logger,
    });
  }
}
