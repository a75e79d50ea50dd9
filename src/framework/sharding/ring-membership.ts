import { shortHash } from '../objects/short-hash.js';
import type { Successions } from './succession.js';

/** What the ring reads of a member's Lease. */
export interface MemberLease {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { holderIdentity?: string | null } & Record<string, unknown>;
}

/** When this replica last saw a member's Lease change, by its own clock. */
export interface MemberSighting {
  /** The Lease's spec, serialised, to notice the next change. */
  spec: string;
  seenAt: number;
  /**
   * Whether this replica has seen the Lease change since it first saw it. A Lease seen once may be a
   * dead replica's, left behind: a coordinator that just started cannot tell until a lease duration
   * passes, so such a member keeps its objects but gets no new ones.
   */
  renewed: boolean;
}

const MAX_LEASE_NAME = 253;
const MAX_MEMBER = 63;
const LEADER_SUFFIX = '-leader';

/**
 * The prefix of the member Leases of the ring whose coordinator holds `leaderLease`:
 * `konductor-leader` gives `konductor-shard-`, so a member's Lease is `konductor-shard-<member>`.
 * Cut with a hash of the whole when a member name of 63 characters would not fit in a Lease name.
 */
export function ringPrefixOf(leaderLease: string): string {
  const base = leaderLease.endsWith(LEADER_SUFFIX)
    ? leaderLease.slice(0, -LEADER_SUFFIX.length)
    : leaderLease;
  const room = MAX_LEASE_NAME - MAX_MEMBER - '-shard-'.length;
  if (base.length <= room) return `${base}-shard-`;
  const digest = shortHash(base);
  return `${base.slice(0, room - digest.length - 1)}-${digest}-shard-`;
}

/**
 * The sightings after reading the member Leases: a member whose Lease spec changed (a renewal) is seen
 * now, one whose spec is as before keeps its last sighting, and one whose Lease is gone or released (no
 * holder) leaves at once. Expiry is judged from these sightings, never from times written in the Lease,
 * so replicas need no synchronised clocks (as leader election).
 */
export function sightMembers(
  previous: ReadonlyMap<string, MemberSighting>,
  leases: readonly MemberLease[],
  prefix: string,
  now: number,
): Map<string, MemberSighting> {
  const next = new Map<string, MemberSighting>();
  for (const lease of leases) {
    const name = lease.metadata?.name ?? '';
    if (!name.startsWith(prefix) || name.length === prefix.length) continue;
    if (!lease.spec?.holderIdentity) continue;
    const member = name.slice(prefix.length);
    const spec = JSON.stringify(lease.spec);
    const last = previous.get(member);
    next.set(
      member,
      last === undefined
        ? { spec, seenAt: now, renewed: false }
        : last.spec === spec
          ? last
          : { spec, seenAt: now, renewed: true },
    );
  }
  return next;
}

/** The ring's members as this replica sees them: members to place objects on, and members not yet seen renewing. */
export interface MemberView {
  /** Members seen renewing within the last lease duration, sorted by name: objects go to them. */
  live: string[];
  /** Members whose Lease is fresh but not yet seen renewing: they keep their objects, get no new ones. */
  pending: string[];
}

/** The ring as this replica sees it: its members, and the objects of those that left. */
export interface RingView extends MemberView, Successions {}

/** The ring from the sightings: members whose Lease changed within the last `leaseDurationMs`. */
export function ringView(
  sightings: ReadonlyMap<string, MemberSighting>,
  now: number,
  leaseDurationMs: number,
): MemberView {
  const view: MemberView = { live: [], pending: [] };
  for (const [member, sighting] of sightings) {
    if (now - sighting.seenAt >= leaseDurationMs) continue;
    (sighting.renewed ? view.live : view.pending).push(member);
  }
  view.live.sort();
  view.pending.sort();
  return view;
}

/**
 * Live members not seen renewing for `quietMs` or more: their holder may be dead, and their Lease
 * runs out `leaseDurationMs` after the last renewal seen.
 */
export function quietMembers(
  sightings: ReadonlyMap<string, MemberSighting>,
  live: readonly string[],
  now: number,
  quietMs: number,
): string[] {
  return live.filter((member) => now - (sightings.get(member)?.seenAt ?? now) >= quietMs);
}

/**
 * The members whose objects `self` watches ahead of inheriting them, of those reported quiet: the
 * others, or none when `self` is among them (its reads are stale, not every member dead: watching them
 * all would list every object at once as the API server recovers).
 */
export function quietToWatch(quiet: readonly string[], self: string): string[] {
  return quiet.includes(self) ? [] : quiet.filter((member) => member !== self);
}
