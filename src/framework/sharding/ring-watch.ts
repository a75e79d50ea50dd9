import type { ApiClient } from '../api/api-client.js';
import { LEASES, namespacedCollectionPath } from '../api/resource.js';
import { systemClock, type Clock } from '../clock/clock.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import {
  quietMembers,
  ringView,
  sightMembers,
  type MemberLease,
  type MemberSighting,
  type RingView,
} from './ring-membership.js';
import { heirsOf, successionsOf } from './succession.js';

/** What a {@link RingWatch} reads and reports with. */
export interface RingWatchOptions {
  client: ApiClient;
  /** Where the member Leases are (the leader Lease's namespace). */
  namespace: string;
  /** The member Leases' name prefix ({@link ringPrefixOf}). */
  prefix: string;
  /** The annotation naming a departed member's heirs ({@link ShardLabels.heirs}). */
  heirsKey: string;
  leaseDurationMs: number;
  /** How often the Leases are read. */
  periodMs: number;
  logger: Logger;
  metrics: Metrics;
  clock?: Clock;
  /** Called with the ring each time its members, departures or successions change (and once first). */
  onChange: (ring: RingView) => void;
  /** Called after every read that succeeded. */
  onTick?: () => void;
  /**
   * Called, after `onChange`, with the members to watch ahead of a succession each time they change:
   * those live but not seen renewing for `quietAfterMs`, and those gone whose heirs are not named yet.
   */
  onQuiet?: (members: readonly string[]) => void;
  /** Default: half the lease duration. */
  quietAfterMs?: number;
}

/** How often the Leases are read while a departed member has no heirs yet. */
const AWAITING_HEIRS_MS = 200;

/**
 * The ring's live members as this replica sees them, from reading the member Leases every period. A
 * read that fails changes nothing: a replica that cannot reach the API server never takes the others
 * for dead (it will lose its own Lease first).
 */
export class RingWatch {
  private sightings = new Map<string, MemberSighting>();
  private published: string | undefined;
  private quiet = '';
  private readonly controller = new AbortController();
  private running: Promise<void> | undefined;
  private failing = false;
  private wake: (() => void) | undefined;
  /** The ring last published. */
  ring: RingView = { live: [], pending: [], departed: [], successions: new Map() };

  constructor(private readonly options: RingWatchOptions) {}

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.controller.abort();
    this.wake?.();
    await this.running;
  }

  /** Reads the Leases now rather than at the end of the period (the coordinator just named heirs). */
  readNow(): void {
    this.wake?.();
  }

  private async loop(): Promise<void> {
    const { clock = systemClock, periodMs } = this.options;
    const signal = this.controller.signal;
    while (!signal.aborted) {
      await this.read();
      // A departure without heirs yet: they are named within moments, and each heir's share waits
      // for this replica to read them, so the Leases are read again sooner until then.
      const ms = this.ring.departed.length > 0 ? Math.min(periodMs, AWAITING_HEIRS_MS) : periodMs;
      const sleeping = new AbortController();
      const stopSleeping = () => sleeping.abort();
      signal.addEventListener('abort', stopSleeping, { once: true });
      this.wake = stopSleeping;
      await clock.sleep(ms, sleeping.signal).catch(() => undefined);
      signal.removeEventListener('abort', stopSleeping);
      this.wake = undefined;
    }
  }

  private async read(): Promise<void> {
    const {
      client,
      namespace,
      prefix,
      heirsKey,
      leaseDurationMs,
      logger,
      metrics,
      clock = systemClock,
    } = this.options;
    let leases: MemberLease[];
    try {
      const list = await client.request<{ items?: MemberLease[] }>(
        'GET',
        namespacedCollectionPath(LEASES, namespace),
        { signal: this.controller.signal, timeoutMs: Math.max(1_000, this.options.periodMs) },
      );
      leases = list.items ?? [];
    } catch (error) {
      if (this.controller.signal.aborted) return;
      if (!this.failing)
        logger.warn(
          { err: error instanceof Error ? error.message : String(error), namespace },
          'cannot read the sharding ring’s Leases; keeping the members last seen',
        );
      this.failing = true;
      return;
    }
    this.failing = false;
    // Sighted when the answer came, as leader election does: a renewal may have landed while the read
    // was under way, and its member must never be taken for gone before it has stopped its work.
    const answeredAt = clock.now();
    // A Lease with heirs is never a member again, whatever its holder does.
    const members = leases.filter((lease) => heirsOf(lease, heirsKey) === undefined);
    this.sightings = sightMembers(this.sightings, members, prefix, answeredAt);
    const view = ringView(this.sightings, answeredAt, leaseDurationMs);
    const ring: RingView = { ...view, ...successionsOf(leases, prefix, heirsKey, view) };
    metrics.set('shard_ring_members', ring.live.length);
    const key = JSON.stringify([
      ring.live,
      ring.pending,
      ring.departed,
      [...ring.successions].sort(([a], [b]) => (a < b ? -1 : 1)),
    ]);
    if (key !== this.published) {
      this.published = key;
      this.ring = ring;
      this.options.onChange(ring);
    }
    // As the sightings: the time the answer came.
    this.reportQuiet(answeredAt);
    this.options.onTick?.();
  }

  private reportQuiet(now: number): void {
    const { onQuiet, quietAfterMs = this.options.leaseDurationMs / 2 } = this.options;
    if (!onQuiet) return;
    const ring = this.ring;
    const members = [
      ...quietMembers(this.sightings, ring.live, now, quietAfterMs),
      ...ring.departed.map((departure) => departure.member),
    ].sort();
    if (members.join('\n') === this.quiet) return;
    this.quiet = members.join('\n');
    onQuiet(members);
  }
}
