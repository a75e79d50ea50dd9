import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import { ObjectApi } from '../api/object-api.js';
import type { Resource } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import { memberFor, shardKey } from './ring.js';
import type { ShardLabels } from './shard-labels.js';
import type { Succession } from './succession.js';

/**
 * What a member does with an event of its watches: `handle` it; `drain` the object (stop its timers
 * and daemons, then let go of it: the coordinator has asked); `forget` it (it left this shard, or was
 * never this member's: no handler runs, its timers and daemons stop); or `skip` the event (a DELETED
 * that only said the object moved between two of this member's watches: its own watch delivers it).
 */
export type ShardVerdict = 'handle' | 'drain' | 'forget' | 'skip';

/**
 * Departed members remembered after their succession ends, newest kept: a leftover copy from a closed
 * watch comes within seconds, and a replica of a Deployment that rolls daily sees some 1,000 in a year.
 */
const REMEMBERED_DEPARTURES = 1_000;

/**
 * One replica's membership in the ring: which member it is, what its watches select, and how it
 * tells an object that left its shard from a deleted one. A watch with a label selector reports an
 * object whose label moved away as DELETED, with the object as it was before (labels included), so
 * a DELETED is checked: objects this member released itself are known, others are read once.
 *
 * Besides its own objects, a member handles its share of the objects of departed members it is an
 * heir of (see {@link Succession}), from the moment the heirs are named until each is relabelled.
 */
export class ShardMember {
  /** Objects released after a drain whose DELETED (leaving the selector) has not come yet. */
  private readonly released = new Set<string>();
  /** The departed members this member is an heir of, with all their heirs. */
  private inherited = new Map<string, readonly string[]>();
  /** The members this one was an heir of (the newest 1,000): their objects' late copies are checked. */
  private readonly everInherited = new Set<string>();
  /** Inherited objects seen relabelled for this member: their own watch is the truth now. */
  private readonly relabelled = new Set<string>();
  /** Inherited objects whose deletion this member handled: any later copy is a lagging watch's. */
  private readonly gone = new Set<string>();

  constructor(
    /** This replica's member name, the value of the shard label of its objects. */
    readonly member: string,
    readonly labels: ShardLabels,
    private readonly client: ApiClient,
    private readonly logger: Logger,
  ) {}

  /** The label selector of this member's watches. */
  get selector(): string {
    return this.labels.memberSelector(this.member);
  }

  /**
   * Takes the ring's successions; returns the label selectors of the departed members' objects this
   * member should watch, one per departed member (a watch is never replaced by a wider one, whose
   * listing would bring back copies older than the events already handled), and whether its share of
   * one it already watches grew: a dead heir was dropped, and its part of the objects, already listed
   * and passed over, is this member's to run now.
   */
  inherit(successions: ReadonlyMap<string, Succession>): { selectors: string[]; grown: boolean } {
    const before = this.inherited;
    this.inherited = new Map();
    let grown = false;
    for (const [departed, { heirs }] of successions)
      if (heirs.includes(this.member)) {
        this.inherited.set(departed, heirs);
        // Re-added last, so the departures forgotten first are the oldest.
        this.everInherited.delete(departed);
        this.everInherited.add(departed);
        const earlier = before.get(departed);
        if (earlier && earlier.some((heir) => !heirs.includes(heir))) grown = true;
      }
    for (const departed of this.everInherited) {
      if (this.everInherited.size <= REMEMBERED_DEPARTURES) break;
      if (!this.inherited.has(departed)) this.everInherited.delete(departed);
    }
    if (this.inherited.size === 0) this.relabelled.clear();
    const selectors = [...this.inherited.keys()]
      .sort()
      .map((departed) => this.labels.memberSelector(departed));
    return { selectors, grown };
  }

  /** Whether this member handles the object now: its own, or its share of a departed member's. */
  owns(resource: Resource, object: KubeObject): boolean {
    const label = this.labels.memberOf(object);
    if (label === undefined) return false;
    if (label === this.member) return true;
    const heirs = this.inherited.get(label);
    if (!heirs) return false;
    const key = shardKey(resource, object.metadata?.namespace, object.metadata?.name ?? '');
    return memberFor(key, heirs) === this.member;
  }

  /**
   * The events of one run to act on. An inherited object relabelled for this member arrives through
   * two watches, and the departed member's watch may deliver an older copy after this member's own:
   * once an object was seen with this member's label, copies with another label are dropped, and the
   * run acts on the newest own copy (undefined: this run has none, nothing to do).
   */
  eventsToActOn<E extends { type: string; object: KubeObject }>(
    events: readonly E[],
  ): readonly E[] | undefined {
    // As they are, never copied: most members never inherit, and this runs for every object's run.
    if (this.everInherited.size === 0) return events;
    const uid = events.at(-1)?.object.metadata?.uid ?? '';
    if (this.gone.has(uid)) return undefined;
    // Copies from the watch of a member this one no longer inherits from are leftovers of a closed watch.
    const current = events.filter((event) => {
      const label = this.labels.memberOf(event.object);
      return !(label && this.everInherited.has(label) && !this.inherited.has(label));
    });
    const own = current.filter((event) => this.labels.memberOf(event.object) === this.member);
    // Only while inheriting (cleared after): a departed member's copies come only from its open watches.
    if (this.inherited.size > 0 && own.some((event) => event.type !== 'DELETED'))
      this.relabelled.add(uid);
    if (!this.relabelled.has(uid)) return current.length > 0 ? current : undefined;
    return own.length > 0 ? own : undefined;
  }

  /** What to do with the newest event of an object (see {@link ShardVerdict}). */
  async verdict(
    resource: Resource,
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    object: KubeObject,
  ): Promise<ShardVerdict> {
    const uid = object.metadata?.uid ?? '';
    if (type !== 'DELETED') {
      if (!this.owns(resource, object)) return 'forget';
      // A departed member's drain request is void: the coordinator relabels the object for its heir.
      const own = this.labels.memberOf(object) === this.member;
      return own && this.labels.isDraining(object) ? 'drain' : 'handle';
    }
    if (this.released.delete(uid)) return 'forget';
    const label = this.labels.memberOf(object) ?? '';
    const owned = this.owns(resource, object);
    // Another heir's share of a departed member's objects, or another member's: never this member's.
    if (!owned) return 'forget';
    const now = await this.current(resource, object);
    if (now === 'gone') {
      if (!owned) return 'forget';
      if (label !== this.member) this.goneNow(uid);
      return 'handle';
    }
    if (now === 'unknown' || now.metadata?.uid !== object.metadata?.uid) return 'forget';
    return this.owns(resource, now) ? 'skip' : 'forget';
  }

  /** Remembers an inherited object as deleted; at most 10,000 (uids are never reused, the oldest go first). */
  private goneNow(uid: string): void {
    this.gone.add(uid);
    if (this.gone.size > 10_000) this.gone.delete(this.gone.values().next().value!);
  }

  /**
   * Lets go of a drained object: both labels go, only while it is still this member's and draining.
   * A patch refused for that (422), or an object gone (404), is no failure.
   */
  async release(resource: Resource, object: KubeObject): Promise<void> {
    const uid = object.metadata?.uid ?? '';
    const namespace = object.metadata?.namespace;
    const name = object.metadata?.name ?? '';
    const added = !this.released.has(uid);
    this.released.add(uid);
    try {
      await new ObjectApi(this.client, resource).jsonPatch(
        namespace,
        name,
        this.labels.releasePatch(this.member),
      );
      this.logger.debug({ namespace, name }, 'drained: handed the object on');
    } catch (error) {
      // Only this call's entry goes: an earlier release that succeeded still awaits its DELETED.
      if (added) this.released.delete(uid);
      if (error instanceof ApiError && (error.status === 422 || error.status === 404)) return;
      throw error;
    }
  }

  /**
   * The object as it is now, after a DELETED: it may have left this shard, moved between this member's
   * watches (a departed member's object relabelled for this heir), or been deleted. When the answer is
   * unknown (the read failed), it is taken as left: forgetting costs at most an optional delete
   * handler, running one on a live object could act on another member's object.
   */
  private async current(
    resource: Resource,
    object: KubeObject,
  ): Promise<KubeObject | 'gone' | 'unknown'> {
    const namespace = object.metadata?.namespace;
    const name = object.metadata?.name ?? '';
    try {
      return await new ObjectApi(this.client, resource).get(namespace, name);
    } catch (error) {
      if (ApiError.isNotFound(error)) return 'gone';
      this.logger.warn(
        { namespace, name, err: error instanceof Error ? error.message : String(error) },
        'could not tell whether the object was deleted or left this shard; taking it as left',
      );
      return 'unknown';
    }
  }
}
