import { CLOCK_SKEW_MS } from './certificates.js';

/**
 * When webhook certificates are issued, renewed and retired: a pure function of what is stored and
 * the time, so every replica reading the same Secret plans the same step, and the step can be tested
 * at any instant. The store ({@link CertificateStore}) does the I/O.
 *
 * The order keeps every admission request working while keys change:
 * 1. the serving certificate is renewed at 2/3 of its life, by the current CA;
 * 2. ahead of the CA's expiry a new CA is *staged*: added to the published bundle (old + new) while the
 *    old CA still signs, so the API server learns to trust it before it sees it;
 * 3. after the overlap the new CA is *promoted*: the serving certificate switches to one it signs, and
 *    the old CA stays in the bundle (*retired*) for every replica still serving the old certificate;
 * 4. one overlap after the switch (or when it expires, if sooner) the retired CA leaves the bundle.
 */

/** A certificate's lifetime, epoch milliseconds. */
export interface Lifetime {
  notBefore: number;
  notAfter: number;
}

/** What is stored, already checked by the store: anything unusable is simply absent here. */
export interface RotationState {
  /** The CA that signs the serving certificate (with its key). */
  authority?: Lifetime;
  /** A staged CA (with its key): in the bundle, not yet signing. */
  next?: Lifetime;
  /** CAs still in the bundle that no longer sign (no key kept). */
  retired: readonly Lifetime[];
  /** The serving certificate, when it is signed by `authority`, its key matches and it names every host. */
  serving?: Lifetime;
}

/** The lifetimes to issue with, and the overlap between publishing a CA change and acting on it. */
export interface RotationTimes {
  caValidityMs: number;
  servingValidityMs: number;
  /** How long a bundle change is given to reach the webhook configurations and every replica. */
  overlapMs: number;
}

/** One step; the store applies it, in this order, in one write. */
export interface RotationPlan {
  /** No usable CA (first start, or unusable contents): start over with a new CA and serving certificate, nothing else trusted. */
  issueAuthority: boolean;
  /** Add a new CA to the bundle, still signing with the current one. */
  stageAuthority: boolean;
  /** The staged CA becomes the signer; the current one is retired (kept in the bundle). */
  promoteAuthority: boolean;
  /** Indexes into `state.retired` to remove from the bundle. */
  dropRetired: number[];
  /** Issue a new serving certificate from the (possibly just promoted) signing CA. */
  renewServing: boolean;
  /** When to look again (epoch ms; `Infinity` when nothing is due): the next time one of the above becomes due. */
  nextCheckAt: number;
}

/** The default overlap: a tenth of the serving lifetime, at least `pollIntervalMs` (every replica must have re-read the Secret). */
export function defaultOverlapMs(servingValidityMs: number, pollIntervalMs: number): number {
  return Math.max(servingValidityMs / 10, pollIntervalMs);
}

/** When a serving certificate is due for renewal: 2/3 into its life. */
export function servingRenewalAt(serving: Lifetime): number {
  const issued = serving.notBefore + CLOCK_SKEW_MS;
  return issued + ((serving.notAfter - issued) * 2) / 3;
}

/**
 * When a new CA is staged: 2/3 into the current CA's life, but early enough that staging, the overlap
 * and the switch all happen with time to spare before the CA expires (two overlaps).
 */
export function stagingAt(authority: Lifetime, times: RotationTimes): number {
  const issued = authority.notBefore + CLOCK_SKEW_MS;
  return Math.min(
    issued + ((authority.notAfter - issued) * 2) / 3,
    authority.notAfter - 2 * times.overlapMs,
  );
}

/** When a staged CA is promoted: one overlap after it was issued (and published). */
export function promotionAt(next: Lifetime, times: RotationTimes): number {
  return next.notBefore + CLOCK_SKEW_MS + times.overlapMs;
}

/**
 * When a retired CA leaves the bundle: when it expires, or one overlap after the serving certificate
 * switched away from it, whichever is sooner. Not before a serving certificate from the new CA exists.
 */
export function retirementAt(
  retired: Lifetime,
  serving: Lifetime | undefined,
  times: RotationTimes,
): number {
  if (serving === undefined) return retired.notAfter;
  return Math.min(retired.notAfter, serving.notBefore + CLOCK_SKEW_MS + times.overlapMs);
}

/** The step due at `now` for `state`. */
export function planRotation(
  state: RotationState,
  now: number,
  times: RotationTimes,
): RotationPlan {
  const plan: RotationPlan = {
    issueAuthority: false,
    stageAuthority: false,
    promoteAuthority: false,
    dropRetired: [],
    renewServing: false,
    nextCheckAt: Infinity,
  };
  const { authority, next, serving } = state;
  const later = (at: number): void => {
    if (at > now) plan.nextCheckAt = Math.min(plan.nextCheckAt, at);
  };

  // No CA to sign with, or it expired before a successor took over (the operator was down for long):
  // nothing that still verifies can be kept, so start over.
  if (authority === undefined || authority.notAfter <= now) {
    plan.issueAuthority = true;
    plan.renewServing = true;
    return plan;
  }

  const nextUsable = next !== undefined && next.notAfter > now;
  if (nextUsable) {
    if (now >= promotionAt(next, times)) plan.promoteAuthority = true;
    else later(promotionAt(next, times));
  } else if (now >= stagingAt(authority, times)) {
    plan.stageAuthority = true;
  } else {
    later(stagingAt(authority, times));
  }

  if (
    plan.promoteAuthority ||
    serving === undefined ||
    now >= servingRenewalAt(serving) ||
    serving.notAfter <= now
  ) {
    plan.renewServing = true;
  } else {
    later(servingRenewalAt(serving));
  }

  // A fresh serving certificate restarts the retired CAs' countdown; until then they wait for the current one.
  const switched = plan.renewServing ? undefined : serving;
  state.retired.forEach((retired, index) => {
    const at = plan.renewServing ? retired.notAfter : retirementAt(retired, switched, times);
    if (now >= at) plan.dropRetired.push(index);
    else later(at);
  });
  return plan;
}

/** Whether the plan changes anything. */
export function planIsIdle(plan: RotationPlan): boolean {
  return (
    !plan.issueAuthority &&
    !plan.stageAuthority &&
    !plan.promoteAuthority &&
    !plan.renewServing &&
    plan.dropRetired.length === 0
  );
}
