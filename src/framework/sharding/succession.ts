import { isMemberName } from './ring.js';
import type { MemberLease } from './ring-membership.js';

/** A member whose Lease is still there after it left the ring (released, or not renewed for a lease duration), with no heirs yet. */
export interface Departure {
  member: string;
  /** The Lease's version when it was read: the heirs are written only on that version. */
  resourceVersion?: string;
}

/**
 * The heirs of a departed member, written on its Lease by the coordinator: each of its objects is
 * handled by the heir {@link memberFor} picks among them until the coordinator relabels it for that
 * heir; then the Lease goes. Every replica reads the same heirs, so no two of them take one object.
 */
export interface Succession {
  heirs: string[];
  resourceVersion?: string;
}

/** The ring's departures and successions as read from the member Leases. */
export interface Successions {
  departed: Departure[];
  successions: Map<string, Succession>;
}

/** The heirs written on a Lease, when they are there and well formed (sorted). */
export function heirsOf(lease: MemberLease, heirsKey: string): string[] | undefined {
  const value = lease.metadata?.annotations?.[heirsKey];
  if (value === undefined) return undefined;
  const heirs = value.split(',').filter((member) => isMemberName(member));
  return heirs.length > 0 ? [...new Set(heirs)].sort() : undefined;
}

/**
 * Departed members and successions: a member Lease with heirs is a succession (it is never live
 * again, whatever its holder does); one without, whose member is neither live nor pending, is a
 * departure waiting for its heirs.
 */
export function successionsOf(
  leases: readonly MemberLease[],
  prefix: string,
  heirsKey: string,
  members: { live: readonly string[]; pending: readonly string[] },
): Successions {
  const present = new Set([...members.live, ...members.pending]);
  const result: Successions = { departed: [], successions: new Map() };
  for (const lease of leases) {
    const name = lease.metadata?.name ?? '';
    if (!name.startsWith(prefix) || name.length === prefix.length) continue;
    const member = name.slice(prefix.length);
    const resourceVersion = lease.metadata?.resourceVersion;
    const heirs = heirsOf(lease, heirsKey);
    if (heirs) result.successions.set(member, { heirs, resourceVersion });
    else if (!present.has(member)) result.departed.push({ member, resourceVersion });
  }
  result.departed.sort((a, b) => (a.member < b.member ? -1 : a.member > b.member ? 1 : 0));
  return result;
}

/**
 * The heirs to write for a departed member: the live members the first time; afterwards those of its
 * heirs still live or pending, or the live members when none is. An heir is never added to a succession under
 * way: with rendezvous hashing, dropping a member moves only its own objects, so every surviving heir
 * keeps the objects it took. Undefined: nothing to write (no change, or no live member).
 */
export function nextHeirs(
  current: readonly string[] | undefined,
  live: readonly string[],
  pending: readonly string[] = [],
): string[] | undefined {
  if (live.length === 0) return undefined;
  if (current === undefined) return [...live].sort();
  // A pending heir may be alive: a coordinator that just started sees every member pending at first.
  const surviving = current.filter((heir) => live.includes(heir) || pending.includes(heir));
  if (surviving.length === current.length) return undefined;
  return surviving.length > 0 ? surviving : [...live].sort();
}
