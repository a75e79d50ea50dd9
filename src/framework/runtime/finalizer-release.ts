/**
 * What a stopping operator does with the objects that carry its finalizer (pure; the I/O is in
 * `shutdown-deletions.ts`). A finalizer left behind by an operator that will not come back keeps a
 * namespace in Terminating forever, so a stopping operator first finishes the deletions it can
 * (their delete handlers run), then lets go of the objects no operator instance will serve.
 *
 * The rule, in order:
 * 1. The operator's own namespace (`POD_NAMESPACE`) is being deleted: it is being removed with its
 *    Deployment, and no instance will come back. Every object of that namespace carrying the finalizer
 *    is released (the namespace controller deletes them next), and so is every object, anywhere, whose
 *    deletion has already started.
 * 2. An object whose deletion has started and whose namespace is being deleted is released: the
 *    deletion of a namespace must not wait for an operator that is stopping; its delete handlers had
 *    the whole grace period to finish.
 * 3. Every other object keeps its finalizer: an object in a healthy namespace is served by the next
 *    operator instance (a rolling update, a rescheduled pod), which runs its delete handlers then.
 *    `konductor disconnect` removes what remains when the operator is removed for good.
 */

/** What a stopping operator knows of one object carrying its finalizer. */
export interface HeldObject {
  /** Undefined for a cluster-scoped object. */
  namespace?: string;
  name: string;
  /** Its deletion has started (`metadata.deletionTimestamp` is set). */
  deleting: boolean;
}

/** What a stopping operator knows of the namespaces. */
export interface ReleaseWorld {
  /** The namespace the operator runs in (`POD_NAMESPACE`), when known. */
  ownNamespace?: string;
  /** Namespaces being deleted (or already gone), among the own one and those of deleting objects. */
  terminating: ReadonlySet<string>;
}

/** Keep the finalizer, or release it and say why (logged with the object's namespace/name). */
export type ReleaseVerdict = { release: false } | { release: true; why: string };

/** Whether the operator's own namespace is being deleted: then no instance of it will come back. */
export function ownNamespaceTerminating(world: ReleaseWorld): boolean {
  return world.ownNamespace !== undefined && world.terminating.has(world.ownNamespace);
}

/**
 * Whether a stopping operator keeps working for this object (within its grace period) before it stops:
 * its deletion has started, or it is in the operator's own namespace, which is being deleted (the
 * namespace controller deletes it in a moment, and its delete handlers should run while they can).
 */
export function awaitsDeletion(object: HeldObject, world: ReleaseWorld): boolean {
  return (
    object.deleting || (ownNamespaceTerminating(world) && object.namespace === world.ownNamespace)
  );
}

/** Whether a stopped operator releases the finalizer of this object (see the rule above), and why. */
export function releaseVerdict(object: HeldObject, world: ReleaseWorld): ReleaseVerdict {
  if (ownNamespaceTerminating(world)) {
    const own = world.ownNamespace;
    if (object.namespace === own) {
      return {
        release: true,
        why: `the operator's own namespace ${own} is being deleted, so no operator instance will come back to handle this object`,
      };
    }
    if (object.deleting) {
      return {
        release: true,
        why: `its deletion started while the operator's own namespace ${own} is being deleted, so no operator instance will come back to run its delete handlers`,
      };
    }
    return { release: false };
  }
  if (
    object.deleting &&
    object.namespace !== undefined &&
    world.terminating.has(object.namespace)
  ) {
    return {
      release: true,
      why: `its namespace is being deleted and the operator stopped before its delete handlers finished`,
    };
  }
  return { release: false };
}
