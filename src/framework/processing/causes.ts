import { diff, type Diff } from '../state/diff.js';
import type { Essence } from '../state/essence.js';

/**
 * Why the framework looks at an object now, decided as in Kopf (first match wins). An object already
 * gone (a DELETED event) has no cause: the processor handles it before looking for one.
 * - `free`: it is being deleted and our finalizer is not on it: nothing to do;
 * - `delete`: it is being deleted and our finalizer is on it: delete handlers;
 * - `create`: no diff-base stored: create handlers;
 * - `resume`: unchanged and first seen by this process, in a listing or arriving (ADDED): resume handlers;
 * - `noop`: unchanged (for instance the echo of our own write);
 * - `update`: the essence differs from the diff-base: update and field handlers.
 */
export type Cause =
  | { reason: 'free' }
  | { reason: 'delete' }
  | { reason: 'create' }
  | { reason: 'resume' }
  | { reason: 'noop' }
  | { reason: 'update'; old: Essence; new: Essence; diff: Diff };

export interface CauseInput {
  deletionRequested: boolean;
  hasFinalizer: boolean;
  diffBase: Essence | undefined;
  essence: Essence;
  /** First time this process sees the object: from a listing (the operator (re)started), or arriving (ADDED). */
  resuming: boolean;
}

export function detectCause(input: CauseInput): Cause {
  if (input.deletionRequested)
    return input.hasFinalizer ? { reason: 'delete' } : { reason: 'free' };
  if (input.diffBase === undefined) return { reason: 'create' };
  const changes = diff(input.diffBase, input.essence);
  if (changes.length === 0) return input.resuming ? { reason: 'resume' } : { reason: 'noop' };
  return { reason: 'update', old: input.diffBase, new: input.essence, diff: changes };
}
