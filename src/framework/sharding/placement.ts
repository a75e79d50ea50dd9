/** What the coordinator does with one object. */
export type Placement =
  | { action: 'keep' }
  /** Label it with this member (a new object, or one whose member left the ring). */
  | { action: 'assign'; member: string }
  /** Ask its live member to hand it on; it comes back unassigned and is assigned then. */
  | { action: 'drain' };

/** The object's member left the ring: its heir, once the heirs are written (until then it stays). */
export interface Departed {
  heir: string | undefined;
}

/**
 * Where an object goes, given the member it is labelled with (if any), whether that member is
 * already asked to hand it on, the member the ring wants, the live members and those not yet seen
 * renewing. An object of a live member is never relabelled directly, only drained, so two members
 * never hold it at once; one of a pending member stays until the member is seen renewing or its Lease
 * expires; one of a departed member (its Lease released or expired, its work stopped) goes to the heir
 * that handles it; one labelled with a member that has no Lease at all is assigned at once.
 */
export function placementOf(
  current: string | undefined,
  draining: boolean,
  desired: string,
  live: ReadonlySet<string>,
  pending: ReadonlySet<string> = new Set(),
  departed?: Departed,
): Placement {
  // Its heir may handle it already: the label follows the heir, so no other member takes it meanwhile.
  if (departed)
    return departed.heir ? { action: 'assign', member: departed.heir } : { action: 'keep' };
  if (current === desired)
    return draining ? { action: 'assign', member: desired } : { action: 'keep' };
  if (current !== undefined && pending.has(current)) return { action: 'keep' };
  if (current === undefined || !live.has(current)) return { action: 'assign', member: desired };
  return draining ? { action: 'keep' } : { action: 'drain' };
}
