import type { KubeObject } from '../objects/kube-object.js';

/**
 * The Lease record arithmetic of leader election, pure: what a replica writes to acquire, renew or
 * release a Lease, and what it concludes from the Lease it last saw. The elector loop
 * (leader-election.ts) does the I/O and the waiting.
 */

/** The `spec` of a `coordination.k8s.io/v1` Lease; times are MicroTime strings. */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** A `coordination.k8s.io/v1` Lease. */
export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

/**
 * Formats a time as a Kubernetes MicroTime: RFC 3339 in UTC with exactly six fractional digits.
 * The API server parses MicroTime with a fixed layout and rejects the three digits of `toISOString()`.
 */
export function formatMicroTime(epochMs: number): string {
  const whole = Math.floor(epochMs);
  const micros = Math.floor((epochMs - whole) * 1000);
  return new Date(whole)
    .toISOString()
    .replace(/\.(\d{3})Z$/, (_, millis: string) => `.${millis}${String(micros).padStart(3, '0')}Z`);
}

/** Who holds a Lease; '' when free (or unknown). */
export function leaseHolder(lease: Lease | undefined): string {
  return lease?.spec?.holderIdentity ?? '';
}

/**
 * The annotation by which a leader Lease says its holder coordinates a sharding ring: its value is the
 * holder's identity, so a writer that keeps the annotation but takes the Lease (another program, an
 * older version) unmarks it. A replica with sharding on waits while the leader Lease is held unmarked:
 * its holder handles every object.
 */
export const COORDINATES_SHARDS_ANNOTATION = 'konductor.dev/coordinates-shards';

/** Whether a Lease is held by a replica that coordinates a sharding ring (see {@link COORDINATES_SHARDS_ANNOTATION}). */
export function heldByShardCoordinator(lease: Lease | undefined): boolean {
  const holder = leaseHolder(lease);
  return holder !== '' && lease?.metadata?.annotations?.[COORDINATES_SHARDS_ANNOTATION] === holder;
}

/**
 * The Lease as `identity` writes it at `now` to acquire or renew it: a renewal keeps `acquireTime`
 * and the transition count, a takeover counts one more transition, a new Lease starts at 0. It carries
 * {@link COORDINATES_SHARDS_ANNOTATION} exactly when `coordinatesShards`.
 */
export function leaseHeldBy(
  current: Lease,
  identity: string,
  leaseDurationMs: number,
  now: number,
  coordinatesShards = false,
): Lease {
  const spec = current.spec ?? {};
  const renewing =
    current.metadata?.resourceVersion !== undefined && spec.holderIdentity === identity;
  const time = formatMicroTime(now);
  const { [COORDINATES_SHARDS_ANNOTATION]: _mark, ...annotations } =
    current.metadata?.annotations ?? {};
  if (coordinatesShards) annotations[COORDINATES_SHARDS_ANNOTATION] = identity;
  return {
    ...current,
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { ...current.metadata, annotations },
    spec: {
      ...spec,
      holderIdentity: identity,
      // Whole seconds for other readers (kubectl, client-go replicas); at least 1.
      leaseDurationSeconds: Math.max(1, Math.ceil(leaseDurationMs / 1000)),
      acquireTime: renewing ? (spec.acquireTime ?? time) : time,
      renewTime: time,
      leaseTransitions:
        current.metadata?.resourceVersion === undefined
          ? 0
          : (spec.leaseTransitions ?? 0) + (renewing ? 0 : 1),
    },
  };
}

/**
 * The Lease given up at `now`, as client-go's `release`: no holder, a 1 s duration and fresh times,
 * so a successor takes over at once; no coordinator's mark.
 */
export function leaseReleased(lease: Lease, now: number): Lease {
  const time = formatMicroTime(now);
  const { [COORDINATES_SHARDS_ANNOTATION]: _mark, ...annotations } =
    lease.metadata?.annotations ?? {};
  const spec: LeaseSpec = {
    ...lease.spec,
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: time,
    renewTime: time,
  };
  return { ...lease, metadata: { ...lease.metadata, annotations }, spec };
}

/** A Lease spec as a string, with a fixed field order so equal specs compare equal whatever order the server used. */
export function leaseSpecKey(spec: LeaseSpec = {}): string {
  return JSON.stringify([
    spec.holderIdentity ?? '',
    spec.leaseDurationSeconds,
    spec.acquireTime,
    spec.renewTime,
    spec.leaseTransitions,
  ]);
}

/** What a replica knows of the Lease it last saw: its holder, and when (by its own clock) the spec last changed. */
export interface LeaseObservation {
  holder: string;
  observedAt: number;
}

/**
 * Whether another replica still holds the Lease: held by someone else, and changed within the lease
 * duration by this replica's own clock (never by the times written in it, so clocks need no sync).
 */
export function heldByAnother(
  seen: LeaseObservation,
  identity: string,
  leaseDurationMs: number,
  now: number,
): boolean {
  return seen.holder !== '' && seen.holder !== identity && now <= seen.observedAt + leaseDurationMs;
}

/**
 * How long a replica that does not lead waits before its next attempt: a retry period, but no
 * longer than until just after the Lease it saw would expire, so a dead leader is replaced within the
 * lease duration plus at most one retry period (the lag of its own observation), not a poll later.
 */
export function untilNextAttemptMs(
  seen: LeaseObservation,
  identity: string,
  leaseDurationMs: number,
  retryPeriodMs: number,
  now: number,
): number {
  if (seen.holder === '' || seen.holder === identity) return retryPeriodMs;
  const untilExpiry = seen.observedAt + leaseDurationMs - now;
  // Already past expiry means the last attempt failed for another reason: back to the normal pace.
  return untilExpiry >= 0 ? Math.min(retryPeriodMs, untilExpiry + 1) : retryPeriodMs;
}

/** Longest holder id a log line repeats; a Lease is writable by anyone with RBAC on it, so its text is not trusted. */
const MAX_HOLDER_CHARS = 128;

/**
 * The holder a replica that does not lead should announce now, or undefined: the Lease's holder when
 * it is another replica and not the one announced last, so a standby says who leads once, and again
 * only when the leader changes. Control characters are dropped and the id is cut, as it goes into logs.
 */
export function holderToAnnounce(
  holder: string,
  identity: string,
  lastAnnounced: string,
): string | undefined {
  if (holder === '' || holder === identity) return undefined;
  // eslint-disable-next-line no-control-regex
  const printable = holder.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, MAX_HOLDER_CHARS);
  return printable === '' || printable === lastAnnounced ? undefined : printable;
}
