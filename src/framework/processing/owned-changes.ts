import type { OwnedChange } from '../intents/owned-specs.js';

/** Child changes waiting for their owner's next owned run, by child uid, in the order children last changed. */
export type PendingOwnedChanges = Map<string, OwnedChange>;

/**
 * Adds `change` to the changes waiting for one owner's run: a child's newer change replaces its older
 * one and moves to the end (Map order), so the run sees the newest change per child uid, in the order
 * children last changed, and its `child`/`event` are the last. Child events arriving before the run
 * starts thus merge into one run. A child without a uid is ignored (the API server always sets one).
 */
export function coalesceOwnedChange(
  pending: PendingOwnedChanges,
  change: OwnedChange,
): PendingOwnedChanges {
  const uid = change.child.metadata?.uid;
  if (!uid) return pending;
  pending.delete(uid);
  pending.set(uid, change);
  return pending;
}
