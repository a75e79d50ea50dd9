import type { ApiClient } from '../api/api-client.js';
import { ObjectApi } from '../api/object-api.js';
import type { Resource } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { ShardLabels } from './shard-labels.js';

/**
 * What a member does with an event of its watch: `handle` it; `drain` the object (stop its timers
 * and daemons, then let go of it: the coordinator has asked); or `forget` it (it left this shard: no
 * handler runs, its timers and daemons stop).
 */
export type ShardVerdict = 'handle' | 'drain' | 'forget';

/**
 * One replica's membership in the ring: which member it is, what its watches select, and how it
 * tells an object that left its shard from a deleted one. A watch with a label selector reports an
 * object whose label moved away as DELETED, with the object as it was before (labels included), so
 * a DELETED is checked: objects this member released itself are known, others are read once.
 */
export class ShardMember {
  /** Objects released after a drain whose DELETED (leaving the selector) has not come yet. */
  private readonly released = new Set<string>();

  constructor(
    /** This replica's member name, the value of the shard label of its objects. */
    readonly member: string,
    readonly labels: ShardLabels,
    private readonly client: ApiClient,
    private readonly logger: Logger,
  ) {}

  /** The label selector of this member's watches. */
  get selector(): string {
    return this.labels.memberSelector(this.member);
  }

  /** What to do with the newest event of an object (see {@link ShardVerdict}). */
  async verdict(
    resource: Resource,
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    object: KubeObject,
  ): Promise<ShardVerdict> {
    const uid = object.metadata?.uid ?? '';
    if (type === 'DELETED') {
      if (this.released.delete(uid)) return 'forget';
      return (await this.stillExists(resource, object)) ? 'forget' : 'handle';
    }
    if (this.labels.memberOf(object) !== this.member) return 'forget';
    return this.labels.isDraining(object) ? 'drain' : 'handle';
  }

  /**
   * Lets go of a drained object: both labels go, only while it is still this member's and draining.
   * A patch refused for that (422), or an object gone (404), is no failure.
   */
  async release(resource: Resource, object: KubeObject): Promise<void> {
    const uid = object.metadata?.uid ?? '';
    const namespace = object.metadata?.namespace;
    const name = object.metadata?.name ?? '';
    const added = !this.released.has(uid);
    this.released.add(uid);
    try {
      await new ObjectApi(this.client, resource).jsonPatch(
        namespace,
        name,
        this.labels.releasePatch(this.member),
      );
      this.logger.debug({ namespace, name }, 'drained: handed the object on');
    } catch (error) {
      // Only this call's entry goes: an earlier release that succeeded still awaits its DELETED.
      if (added) this.released.delete(uid);
      const status = (error as { status?: number }).status;
      if (status === 422 || status === 404) return;
      throw error;
    }
  }

  /**
   * Whether an object reported DELETED still exists (it left this shard, or came back to it and its
   * ADDED follows): a live object must never run delete handlers. When the answer is unknown (the
   * read failed), it is taken as still there: forgetting costs at most an optional delete handler,
   * running one on a live object could act on another member's object.
   */
  private async stillExists(resource: Resource, object: KubeObject): Promise<boolean> {
    const namespace = object.metadata?.namespace;
    const name = object.metadata?.name ?? '';
    try {
      const now = await new ObjectApi(this.client, resource).get(namespace, name);
      return now.metadata?.uid === object.metadata?.uid;
    } catch (error) {
      if ((error as { status?: number }).status === 404) return false;
      this.logger.warn(
        { namespace, name, err: error instanceof Error ? error.message : String(error) },
        'could not tell whether the object was deleted or left this shard; taking it as left',
      );
      return true;
    }
  }
}
