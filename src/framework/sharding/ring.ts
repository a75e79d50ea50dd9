import { createHash, randomBytes } from 'node:crypto';
import { shortHash } from '../objects/short-hash.js';

/** A Kubernetes label value: at most 63 characters, alphanumeric at each end. */
const LABEL_VALUE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_MEMBER = 63;
/** Characters of the suffix that tells one start of a replica from the next. */
const INCARNATION = 5;

/** Whether `name` can be a member name: a label value and Lease name segment. */
export function isMemberName(name: string): boolean {
  return name.length <= MAX_MEMBER && LABEL_VALUE.test(name);
}

/**
 * The member that owns `key` among `members`, by rendezvous (highest random weight) hashing: each
 * member scores `hash(member, key)` and the highest wins. A member joining takes about 1/N of the
 * keys from the others, a member leaving hands only its own keys on, and every replica that knows
 * the same members computes the same owner with no shared table. Undefined when there is no member.
 */
export function memberFor(key: string, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const member of members) {
    const score = weight(member, key);
    // Ties (one in 2^48) go to the lower name, so the order of `members` never matters.
    if (score > bestScore || (score === bestScore && best !== undefined && member < best)) {
      best = member;
      bestScore = score;
    }
  }
  return best;
}

/** 48 bits of SHA-1 over the member and the key: fits a double exactly, and spreads evenly. */
function weight(member: string, key: string): number {
  return createHash('sha1').update(member).update('\0').update(key).digest().readUIntBE(0, 6);
}

/**
 * The key an object is hashed by: its resource, namespace and name. The uid would do as well once
 * the object exists, but a mutating webhook labelling an object at creation does not know the uid yet;
 * the name it does, so the webhook and the coordinator always agree.
 */
export function shardKey(
  resource: { group: string; plural: string },
  namespace: string | undefined,
  name: string,
): string {
  return `${resource.group}/${resource.plural}/${namespace ?? ''}/${name}`;
}

/**
 * The member name of one start of a replica: its identity (a Pod's name, usually) cut to fit,
 * lower-cased where needed (then ending in a hash of the whole, so two replicas never share one), and
 * a suffix of its own per start. A member name is never used twice: once its Lease lapses, its objects
 * go to heirs, and a restarted replica taking the same name back would handle them beside the heirs.
 */
export function memberNameOf(replica: string, incarnation: string = newIncarnation()): string {
  const room = MAX_MEMBER - incarnation.length - 1;
  let base: string;
  if (LABEL_VALUE.test(replica) && replica.length <= room) base = replica;
  else {
    const digest = shortHash(replica);
    const cleaned = replica
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .slice(0, room - digest.length - 1)
      .replace(/^-+|-+$/g, '');
    base = cleaned ? `${cleaned}-${digest}` : digest;
  }
  return `${base}-${incarnation}`;
}

/** Five random characters of `[a-z0-9]`. */
function newIncarnation(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from(randomBytes(INCARNATION), (byte) => alphabet[byte % alphabet.length]).join('');
}
