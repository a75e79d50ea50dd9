import type { JsonPatchOp } from '../api/object-api.js';
import type { KubeObject } from '../objects/kube-object.js';

/** The value of the drain label while a member hands an object on. */
export const DRAINING = 'true';

/** A JSON Pointer segment (RFC 6901): `/` and `~` escaped. */
function pointerSegment(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * The labels that say which member of a ring handles an object, under the operator's identity:
 * `<identity>/shard: <member>` assigns it, `<identity>/drain: "true"` asks that member to hand it on.
 * They are bookkeeping, never part of an object's essence, so moving an object runs no handler.
 */
export class ShardLabels {
  /** The assignment label's key. */
  readonly shard: string;
  /** The drain label's key. */
  readonly drain: string;
  /** The annotation on a departed member's Lease naming its heirs (a succession). */
  readonly heirs: string;

  constructor(prefix: string) {
    this.shard = `${prefix}/shard`;
    this.drain = `${prefix}/drain`;
    this.heirs = `${prefix}/heirs`;
  }

  /** The label selector of one member's objects. */
  memberSelector(member: string): string {
    return `${this.shard}=${member}`;
  }

  /** The label selector of the objects of departed members (none: undefined). */
  membersSelector(members: readonly string[]): string | undefined {
    return members.length > 0 ? `${this.shard} in (${[...members].sort().join(',')})` : undefined;
  }

  /** The label selector of objects no member has yet. */
  get unassignedSelector(): string {
    return `!${this.shard}`;
  }

  /** The member an object is assigned to, if any. */
  memberOf(object: KubeObject): string | undefined {
    return object.metadata?.labels?.[this.shard] || undefined;
  }

  /** Whether its member is asked to hand the object on. */
  isDraining(object: KubeObject): boolean {
    return object.metadata?.labels?.[this.drain] === DRAINING;
  }

  /**
   * Merge patch assigning an object to `member` (and clearing a drain request meant for its last one),
   * refused (409) unless the object is still at `resourceVersion`: a placement decided on an older copy
   * never overwrites a newer one.
   */
  assignPatch(member: string, resourceVersion: string | undefined): Record<string, unknown> {
    return {
      metadata: { resourceVersion, labels: { [this.shard]: member, [this.drain]: null } },
    };
  }

  /** Merge patch asking the object's member to hand it on; refused (409) unless still at `resourceVersion`. */
  drainPatch(resourceVersion: string | undefined): Record<string, unknown> {
    return { metadata: { resourceVersion, labels: { [this.drain]: DRAINING } } };
  }

  /**
   * JSON patch by which `member` lets go of an object it drained: both labels go, but only while the
   * object is still assigned to it and still draining (the test operations fail the patch otherwise),
   * so a late or repeated release never undoes the coordinator's next assignment.
   */
  releasePatch(member: string): JsonPatchOp[] {
    const shard = `/metadata/labels/${pointerSegment(this.shard)}`;
    const drain = `/metadata/labels/${pointerSegment(this.drain)}`;
    return [
      { op: 'test', path: shard, value: member },
      { op: 'test', path: drain, value: DRAINING },
      { op: 'remove', path: shard },
      { op: 'remove', path: drain },
    ];
  }
}
