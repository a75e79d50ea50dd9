import type { Subscription } from 'rxjs';
import { ApiError } from '../api/api-error.js';
import { resourceId, type Resource } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { WatchHub } from '../watching/watch-hub.js';
import type { ShardLabels } from './shard-labels.js';
import { collectionKey, inCollection, type ShardedCollection } from './sharded-collection.js';

/** What a {@link NewObjectAssigner} watches with and writes through. */
export interface NewObjectAssignerOptions {
  hub: WatchHub;
  labels: ShardLabels;
  logger: Logger;
  /** The member the ring wants for an object now (undefined: leave it). */
  memberFor: (resource: Resource, object: KubeObject) => string | undefined;
  /** Writes an assignment on the object's version; rejects as the write failed. */
  assign: (resource: Resource, object: KubeObject, member: string) => Promise<void>;
  /** An assignment or a watch failed: the coordinator retries later (its next pass watches again). */
  onFailure: () => void;
  /** Assignments written at once. */
  concurrency: number;
  /** Said in the log when a watch fails. */
  retrySeconds: number;
}

/**
 * The coordinator's watch of objects without an assignment, per collection: it assigns each as it
 * appears (a new object, or one a member handed on), at most `concurrency` at a time, so a listing of
 * 30,000 new objects never becomes 30,000 requests at once. Each object waits once (its newest copy),
 * and its member is chosen when its turn comes, from the ring as it is then.
 */
export class NewObjectAssigner {
  private readonly watched = new Map<string, Subscription>();
  /** By uid. */
  private readonly waiting = new Map<string, { resource: Resource; object: KubeObject }>();
  private assigning = 0;
  private stopped = false;

  constructor(private readonly options: NewObjectAssignerOptions) {}

  /** Whether the collection's unassigned objects are watched (and so assigned here). */
  isWatching(collection: ShardedCollection): boolean {
    return this.watched.has(collectionKey(collection));
  }

  /** Watches the collection's unassigned objects, unless already watched. */
  watch(collection: ShardedCollection): void {
    const key = collectionKey(collection);
    if (this.stopped || this.watched.has(key)) return;
    const { hub, labels, logger, retrySeconds } = this.options;
    const subscription = hub
      .watch(collection.resource, {
        namespace: collection.namespace,
        labelSelector: labels.unassignedSelector,
      })
      .subscribe({
        next: (event) => {
          if (event.type === 'DELETED') this.waiting.delete(event.object.metadata?.uid ?? '');
          if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return;
          if (!inCollection(collection, event.object)) return;
          if (labels.memberOf(event.object) !== undefined) return;
          this.queue(collection.resource, event.object);
        },
        error: (error: unknown) => {
          logger.error(
            { resource: resourceId(collection.resource), err: String(error) },
            `the watch of unassigned objects failed; watching again in ${retrySeconds} s`,
          );
          this.watched.delete(key);
          this.options.onFailure();
        },
      });
    this.watched.set(key, subscription);
  }

  stop(): void {
    this.stopped = true;
    this.waiting.clear();
    for (const subscription of this.watched.values()) subscription.unsubscribe();
    this.watched.clear();
  }

  private queue(resource: Resource, object: KubeObject): void {
    this.waiting.set(object.metadata?.uid ?? '', { resource, object });
    while (this.assigning < this.options.concurrency && this.waiting.size > 0) this.assignNext();
  }

  private assignNext(): void {
    const next = this.waiting.entries().next();
    if (next.done) return;
    const [uid, { resource, object }] = next.value;
    this.waiting.delete(uid);
    this.assigning++;
    const member = this.stopped ? undefined : this.options.memberFor(resource, object);
    // A conflict needs no retry: the object changed, and the watch delivers its newer copy.
    const assigned =
      member === undefined
        ? Promise.resolve()
        : this.options
            .assign(resource, object, member)
            .catch(
              (error: unknown) => void (ApiError.isConflict(error) || this.options.onFailure()),
            );
    void assigned.finally(() => {
      this.assigning--;
      if (!this.stopped) this.assignNext();
    });
  }
}
