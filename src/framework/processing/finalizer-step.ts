/**
 * The finalizer step (kube-rs `finalizer()`): before any change handler runs, the framework finalizer
 * is put on an object that needs it, taken off one that does not, and an object held only by timers
 * or daemons is let go when deleted. The decision is pure; applying it writes test-guarded JSON patches.
 */
import { ApiError } from '../api/api-error.js';
import type { ObjectApi } from '../api/object-api.js';
import type { KubeObject } from '../objects/kube-object.js';
import { addFinalizerOps, hasFinalizer, removeFinalizerOps } from '../state/finalizers.js';
import { Identity } from '../state/identity.js';

/** Attempts at a finalizer patch whose `test` keeps failing because the object keeps changing. */
export const MAX_FINALIZER_ATTEMPTS = 5;

/**
 * Other work that holds objects with the framework finalizer (timers, daemons): `applies` says it
 * wants an object; `release` stops it for an object being deleted, before the finalizer comes off.
 */
export interface Holds {
  applies(body: KubeObject): boolean;
  release(body: KubeObject): Promise<void>;
}

/** What the finalizer step looks at. */
export interface FinalizerStepInput {
  /** Some change handler wants the object (its filters match). */
  handled: boolean;
  /** Timers or daemons hold it. */
  held: boolean;
  /** A non-optional delete handler wants it: its deletion must wait for that handler. */
  deleteHandled: boolean;
  hasFinalizer: boolean;
  deleting: boolean;
}

/** What to do with the finalizer, then: stop here, let a held object go (`release`), or run the change handlers. */
export interface FinalizerStep {
  finalizer: 'add' | 'remove' | 'keep';
  then: 'stop' | 'release' | 'handle';
}

export function finalizerStep(input: FinalizerStepInput): FinalizerStep {
  if (!input.handled && !input.held) {
    // Stealth: an object nothing wants is never written to. But our finalizer left on an object that
    // stopped matching (say, a label was removed) would block its deletion forever, so it comes off.
    return { finalizer: input.hasFinalizer ? 'remove' : 'keep', then: 'stop' };
  }
  const needed = input.held || input.deleteHandled;
  // While the object is being deleted the finalizer stays as it is: delete handlers or holds remove it when done.
  const finalizer =
    input.deleting || needed === input.hasFinalizer ? 'keep' : needed ? 'add' : 'remove';
  // Held only by timers or daemons: no change handlers, so no diff-base to keep; just let it go when deleted.
  if (!input.handled)
    return { finalizer, then: input.deleting && input.hasFinalizer ? 'release' : 'stop' };
  return { finalizer, then: 'handle' };
}

/** A hold's release failed and must be tried again after `delayMs` (say, a reconcile's last run): the finalizer stays. */
export class ReleaseDeferred extends Error {
  override readonly name = 'ReleaseDeferred';

  constructor(readonly delayMs: number) {
    super(`releasing the object is retried in ${Math.round(delayMs / 100) / 10} s`);
  }
}

/** The finalizer patch kept failing its `test` (the object kept changing): the run retries from a fresh read. */
export class FinalizerConflict extends Error {
  override readonly name = 'FinalizerConflict';
}

/**
 * Adds or removes the finalizer of `identity` with a test-guarded JSON patch; a failed `test` (422) or a conflict
 * (409) re-reads the object and tries again. Resolves with the object as written (`onWrite` sees it),
 * or as it is when there was nothing to do.
 */
export async function patchFinalizer(
  api: ObjectApi,
  body: KubeObject,
  action: 'add' | 'remove',
  onWrite: (written: KubeObject) => KubeObject,
  identity: Identity = Identity.DEFAULT,
): Promise<KubeObject> {
  let current = body;
  for (let attempt = 0; attempt < MAX_FINALIZER_ATTEMPTS; attempt++) {
    const meta = current.metadata ?? {};
    const ops =
      action === 'add' ? addFinalizerOps(current, identity) : removeFinalizerOps(current, identity);
    if (ops.length === 0 || (action === 'add' && hasFinalizer(current, identity))) return current;
    try {
      return onWrite(await api.jsonPatch(meta.namespace, meta.name ?? '', ops));
    } catch (error) {
      if (!(error instanceof ApiError && (error.status === 422 || error.status === 409)))
        throw error;
      current = await api.get(meta.namespace, meta.name ?? '');
    }
  }
  throw new FinalizerConflict(`could not ${action} the finalizer: the object kept changing`);
}
