import PQueue from 'p-queue';
import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import { ObjectApi } from '../api/object-api.js';
import { collectionPath, resourceId, type Resource } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { WatchHub } from '../watching/watch-hub.js';
import { placementOf, type Departed, type Placement } from './placement.js';
import { patchPlacement } from './placement-patch.js';
import type { RingView } from './ring-membership.js';
import { memberFor, shardKey } from './ring.js';
import type { MemberLeases } from './member-leases.js';
import type { ShardLabels } from './shard-labels.js';
import { NewObjectAssigner } from './new-object-assigner.js';
import { inCollection, type ShardedCollection } from './sharded-collection.js';
import { nextHeirs, type Departure, type Succession } from './succession.js';

/** What a {@link ShardCoordinator} needs. */
export interface ShardCoordinatorOptions {
  client: ApiClient;
  hub: WatchHub;
  labels: ShardLabels;
  logger: Logger;
  metrics: Metrics;
  /** The collections to share out, read again at every ring change and {@link ShardCoordinator.refresh}. */
  collections: () => readonly ShardedCollection[];
  /** Departed members' Leases: their heirs are named there, and they are removed once relabelled. */
  leases: MemberLeases;
  /** Called after heirs were named on a Lease (this replica reads the ring again, as it may be one). */
  onHeirsNamed?: () => void;
  /**
   * Resolves once this replica has listed the departed members' objects it is an heir of (or `stopped`
   * aborts). A pass relabels them only then: the heirs handle them already, and relabelling would slow
   * each heir's listing.
   */
  heirsListed?: (
    successions: ReadonlyMap<string, Succession>,
    stopped: AbortSignal,
  ) => Promise<void>;
  /** Objects listed per page during a rebalance. Default 500. */
  pageSize?: number;
}

/** Patches sent at once during a rebalance: quick, without crowding out the handlers' own writes. */
const PATCHES_AT_ONCE = 16;

/**
 * Relabellings of departed members' objects sent at once: their heirs handle them already, so this is
 * bookkeeping, and at full speed it would slow the heirs' own listing of those objects.
 */
const RELABELS_AT_ONCE = 2;

/** A pass that could not place every object runs again after this long (a constant: never a hot loop). */
const RETRY_MS = 5_000;

/** What one rebalance did, by member. */
interface Moves {
  /** By the member assigned to. */
  assigned: Map<string, number>;
  /** By the member asked to hand on. */
  drained: Map<string, number>;
  failed: number;
}

/**
 * The coordinating replica's side of sharding (the leader's): it labels every object of the handled
 * collections with the member the ring wants. New objects come through a watch of unlabelled ones;
 * when the ring changes, every object is listed again and those that belong elsewhere are drained
 * from their live member, or assigned at once when their member left. It is the only writer of the
 * assignment label, and only one replica coordinates at a time (it holds the leader Lease).
 */
export class ShardCoordinator {
  private members: readonly string[] = [];
  private live = new Set<string>();
  private pending = new Set<string>();
  private departed = new Map<string, Departure>();
  private successions = new Map<string, Succession>();
  private naming: Promise<void> | undefined;
  private nameAgain = false;
  private passing: Promise<void> | undefined;
  private again = false;
  private readonly stopping = new AbortController();
  private retry: ReturnType<typeof setTimeout> | undefined;
  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }
  private readonly newObjects: NewObjectAssigner;
  /**
   * Whether the next pass lists every object: at the start, when a member joins, and for collections
   * that appeared. Otherwise members only left, and rendezvous hashing moves only their objects: the
   * pass lists those alone, so a failover does not wait behind a listing of the whole fleet.
   */
  private wholeRing = true;

  constructor(private readonly options: ShardCoordinatorOptions) {
    this.newObjects = new NewObjectAssigner({
      ...options,
      memberFor: (resource, object) => this.desired(resource, object),
      assign: (resource, object, member) =>
        this.apply(resource, object, { action: 'assign', member }),
      onFailure: () => this.retryLater(),
      concurrency: PATCHES_AT_ONCE,
      retrySeconds: RETRY_MS / 1000,
    });
  }

  /** The ring changed (or was first seen): rebalance every collection. */
  update(ring: RingView): void {
    if (ring.live.some((member) => !this.live.has(member))) this.wholeRing = true;
    this.members = ring.live;
    this.live = new Set(ring.live);
    this.pending = new Set(ring.pending);
    this.departed = new Map(ring.departed.map((departure) => [departure.member, departure]));
    this.successions = new Map(ring.successions);
    // At once, not after a pass under way: the heirs handle a departed member's objects from then on.
    void this.nameHeirs();
    this.rebalance();
  }

  /** Starts watching collections that appeared since (handlers resolved late), rebalancing those. */
  refresh(): void {
    if (this.options.collections().some((c) => !this.newObjects.isWatching(c))) {
      this.wholeRing = true;
      this.rebalance();
    }
  }

  stop(): Promise<void> {
    this.stopping.abort();
    clearTimeout(this.retry);
    this.newObjects.stop();
    return this.passing ?? Promise.resolve();
  }

  /** Runs a pass now, or once more after the one under way (which may have read an older ring). */
  private rebalance(): void {
    if (this.stopped) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    this.passing = this.pass().finally(() => {
      this.passing = undefined;
      if (this.again) {
        this.again = false;
        this.rebalance();
      }
    });
  }

  private async pass(): Promise<void> {
    if (this.members.length === 0) return;
    const members = this.members;
    const whole = this.wholeRing;
    this.wholeRing = false;
    await this.nameHeirs();
    const collections = this.options.collections();
    // New objects are assigned meanwhile: only relabelling waits for the heirs' listing.
    for (const collection of collections) this.newObjects.watch(collection);
    const successions = new Map(this.successions);
    if (successions.size > 0) await this.options.heirsListed?.(successions, this.stopping.signal);
    const selector = whole
      ? undefined
      : this.options.labels.membersSelector([...this.departed.keys(), ...successions.keys()]);
    if (!whole && selector === undefined) return;
    const moves: Moves = { assigned: new Map(), drained: new Map(), failed: 0 };
    for (const collection of collections) {
      if (this.stopped || members !== this.members) {
        this.wholeRing ||= whole;
        return;
      }
      try {
        await this.placeListed(collection, moves, selector);
      } catch (error) {
        moves.failed++;
        this.options.logger.warn(
          {
            resource: resourceId(collection.resource),
            err: error instanceof Error ? error.message : String(error),
          },
          `could not list objects to share out; trying again in ${RETRY_MS / 1000} s`,
        );
      }
    }
    // A ring changed meanwhile: the pass it queued places everything against the new ring.
    if (this.stopped || members !== this.members) {
      this.wholeRing ||= whole;
      return;
    }
    if (moves.failed > 0) {
      this.wholeRing ||= whole;
      this.retryLater();
    } else await this.endSuccessions(successions);
    const summary = (counts: Map<string, number>) => Object.fromEntries(counts);
    this.options.logger.info(
      {
        members,
        assigned: summary(moves.assigned),
        draining: summary(moves.drained),
        failed: moves.failed,
      },
      whole
        ? `rebalanced ${members.length} shard member(s)`
        : `placed departed members’ objects among ${members.length} shard member(s)`,
    );
  }

  /** Runs another pass soon: one that failed to list or patch an object would otherwise wait for the next ring change. */
  private retryLater(): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.rebalance();
    }, RETRY_MS);
    this.retry.unref();
  }

  /**
   * Names the heirs of each departed member on its Lease (only on the version read: a Lease renewed
   * meanwhile is a live member's), and drops dead heirs from successions under way.
   */
  private nameHeirs(): Promise<void> {
    if (this.naming) {
      this.nameAgain = true;
      return this.naming;
    }
    this.naming = (async () => {
      do {
        this.nameAgain = false;
        await this.writeHeirs();
      } while (this.nameAgain && !this.stopped);
    })().finally(() => (this.naming = undefined));
    return this.naming;
  }

  private async writeHeirs(): Promise<void> {
    const { logger, leases } = this.options;
    const writes: Array<{ member: string; heirs: string[]; resourceVersion?: string }> = [];
    for (const departure of this.departed.values()) {
      const heirs = this.successions.has(departure.member)
        ? undefined
        : nextHeirs(undefined, this.members);
      if (heirs) writes.push({ ...departure, heirs });
    }
    for (const [member, succession] of this.successions) {
      const heirs = nextHeirs(succession.heirs, this.members, [...this.pending]);
      if (heirs) writes.push({ member, heirs, resourceVersion: succession.resourceVersion });
    }
    for (const { member, heirs, resourceVersion } of writes) {
      try {
        const written = await leases.nameHeirs(member, heirs, resourceVersion);
        if (written === undefined) continue;
        this.departed.delete(member);
        this.successions.set(member, { heirs, resourceVersion: written });
        logger.info({ member, heirs }, 'a member left the ring: its heirs handle its objects now');
        this.options.onHeirsNamed?.();
      } catch (error) {
        logger.warn(
          { member, err: error instanceof Error ? error.message : String(error) },
          `could not name a departed member's heirs; trying again in ${RETRY_MS / 1000} s`,
        );
        this.retryLater();
      }
    }
  }

  /** After a pass that relabelled every object of departed members for their heirs: their Leases go. */
  private async endSuccessions(successions: ReadonlyMap<string, Succession>): Promise<void> {
    for (const [member, { resourceVersion }] of successions) {
      if (this.successions.get(member)?.resourceVersion !== resourceVersion) continue;
      const removed = await this.options.leases.remove(member, resourceVersion).catch(() => false);
      if (!removed) {
        this.retryLater();
        continue;
      }
      this.successions.delete(member);
      this.options.logger.info({ member }, 'every object of a departed member is with its heirs');
      // One more pass: an object a webhook labelled for the member as it left now has no member's Lease.
      this.wholeRing = true;
      this.retryLater();
    }
  }

  /** Lists a collection page by page (only the objects `selector` picks, if given) and places each object. */
  private async placeListed(
    collection: ShardedCollection,
    moves: Moves,
    selector: string | undefined,
  ): Promise<void> {
    const { client, labels, pageSize = 500 } = this.options;
    const members = this.members;
    let continueToken: string | undefined;
    do {
      const query = new URLSearchParams({ limit: String(pageSize) });
      if (selector) query.set('labelSelector', selector);
      if (continueToken) query.set('continue', continueToken);
      const page = await client.request<{ items?: KubeObject[]; metadata?: { continue?: string } }>(
        'GET',
        `${collectionPath(collection.resource, collection.namespace)}?${query.toString()}`,
      );
      const work: Array<() => Promise<void>> = [];
      for (const object of page.items ?? []) {
        if (!inCollection(collection, object)) continue;
        // The watch of unassigned objects assigns these; both at once would only collide (409).
        if (labels.memberOf(object) === undefined && this.newObjects.isWatching(collection))
          continue;
        if (this.placementFor(collection.resource, object).action === 'keep') continue;
        work.push(() =>
          this.place(collection.resource, object).then(
            (placed) => placed && count(moves[placed.action], placed.member),
            () => void moves.failed++,
          ),
        );
      }
      await new PQueue({ concurrency: selector ? RELABELS_AT_ONCE : PATCHES_AT_ONCE }).addAll(work);
      continueToken = page.metadata?.continue || undefined;
      // A ring that changed meanwhile makes the rest of this listing moot: the next pass reads it anew.
    } while (continueToken && !this.stopped && members === this.members);
  }

  /**
   * Writes an object's placement. An object changed since it was listed (409) is read again and
   * placed once more from its current copy: handlers write to their objects all the time, and a
   * retry of the whole pass for each would list every object again.
   */
  private async place(
    resource: Resource,
    listed: KubeObject,
  ): Promise<{ action: 'assigned' | 'drained'; member: string } | undefined> {
    let object = listed;
    for (let attempt = 1; ; attempt++) {
      // Decided again here, not taken from the listing: the ring may have changed while it was queued.
      const placement = this.placementFor(resource, object);
      if (placement.action === 'keep' || this.stopped) return undefined;
      try {
        await this.apply(resource, object, placement);
        return placement.action === 'assign'
          ? { action: 'assigned', member: placement.member }
          : { action: 'drained', member: this.options.labels.memberOf(object) ?? '' };
      } catch (error) {
        if (!ApiError.isConflict(error) || attempt === 2) throw error;
        const { namespace, name = '' } = object.metadata ?? {};
        object = await new ObjectApi(this.options.client, resource).get(namespace, name);
      }
    }
  }

  /** What the ring wants done with an object now. */
  private placementFor(resource: Resource, object: KubeObject): Placement {
    const desired = this.desired(resource, object);
    if (desired === undefined) return { action: 'keep' };
    const { labels } = this.options;
    const current = labels.memberOf(object);
    return placementOf(
      current,
      labels.isDraining(object),
      desired,
      this.live,
      this.pending,
      this.departedOf(resource, object, current),
    );
  }

  /** Whether the object's member departed, and if so its heir (once the heirs are named). */
  private departedOf(
    resource: Resource,
    object: KubeObject,
    current: string | undefined,
  ): Departed | undefined {
    if (current === undefined) return undefined;
    // The heirs as they are now: named during this pass, or with a dead heir dropped since it began.
    const succession = this.successions.get(current);
    if (succession) {
      const key = shardKey(resource, object.metadata?.namespace, object.metadata?.name ?? '');
      return { heir: memberFor(key, succession.heirs) };
    }
    return this.departed.has(current) ? { heir: undefined } : undefined;
  }

  private desired(resource: Resource, object: KubeObject): string | undefined {
    const name = object.metadata?.name;
    if (!name) return undefined;
    return memberFor(shardKey(resource, object.metadata?.namespace, name), this.members);
  }

  private apply(resource: Resource, object: KubeObject, placement: Placement): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return patchPlacement(this.options, resource, object, placement, RETRY_MS / 1000);
  }
}

function count(counts: Map<string, number>, member: string): void {
  counts.set(member, (counts.get(member) ?? 0) + 1);
}
