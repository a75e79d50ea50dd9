import type { BackoffOptions } from '../clock/backoff.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { WatchHealth } from './watch-health.js';
import type { HeapState } from './memory-budget.js';

/** Options for {@link watchResource}. */
export interface WatchStreamOptions<T extends KubeObject = KubeObject> {
  /** Watch one namespace; all namespaces when omitted (or for cluster-scoped resources). */
  namespace?: string;
  /** Sent to the server, so only matching objects cross the wire. */
  labelSelector?: string;
  /** Sent to the server, so only matching objects cross the wire. */
  fieldSelector?: string;
  /** Page size of the listing. Default 500. */
  pageSize?: number;
  /**
   * Ask for the first listing from the API server's watch cache (`resourceVersion=0`, as client-go's
   * informers do): no read of etcd, and a label selector is applied in memory, so it is many times
   * cheaper on a busy control plane, at the cost of a copy that may be a moment old (the watch then
   * delivers anything newer) and of paging (the cache answers in one response, read item by item).
   * Relistings are always consistent reads. Default `false`.
   */
  firstListFromCache?: boolean;
  /** Server-side watch timeout per request, in seconds. Default: random in [300, 600), like client-go. */
  timeoutSeconds?: () => number;
  /** A connection silent for this long is treated as dead and replaced. Default 70 s (Kopf's figure). */
  idleTimeoutMs?: number;
  /** Reconnect backoff. Default: client-go's 0.8 s doubling to 30 s, reset after 2 min. */
  backoff?: BackoffOptions;
  logger?: Logger;
  metrics?: Metrics;
  /** The objects currently known, by UID; kept up to date by the stream (shared watches read it). */
  store?: Map<string, T>;
  /** Where the stream reports contact with the server and its first listing, for health checks. */
  health?: WatchHealth;
  /**
   * Keep `metadata.managedFields` on the objects. Default `false`: they are removed as each listed
   * page and watch event is parsed, because they are often close to half of an object's JSON and
   * the stream (and everything downstream) keeps objects in memory. Handlers never need them;
   * set this only when a subscriber reads server-side-apply field ownership itself.
   */
  keepManagedFields?: boolean;
  /**
   * Check, from the listing's first page (its objects' size and `metadata.remainingItemCount`), that
   * the V8 heap can hold the whole listing; if not, the stream fails with a {@link MemoryBudgetError}
   * naming the objects, the limit and the `--max-old-space-size` to set, instead of the process dying
   * of "JavaScript heap out of memory" mid-listing. Default `true`.
   */
  memoryBudget?: boolean;
  /** The heap's limit and use (default: `v8.getHeapStatistics()`); for tests. */
  heapStatistics?: () => Pick<HeapState, 'limitBytes' | 'usedBytes'>;
}
