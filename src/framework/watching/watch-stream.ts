import { Observable } from 'rxjs';
import type { ApiClient } from '../api/api-client.js';
import { ApiError, isGone } from '../api/api-error.js';
import { apiVersionOf, collectionPath, resourceId, type Resource } from '../api/resource.js';
import { withoutManagedFields } from '../api/managed-fields.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import { noMetrics, type Metrics } from '../observability/metrics.js';
import { Backoff } from '../clock/backoff.js';
import { sleep } from '../clock/long-timeout.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { WatchEvent } from './watch-events.js';
import type { WatchStatus } from './watch-health.js';
import { isTrackable, parseWatchLine, type TrackableObject } from './watch-line.js';
import { shareStrings, StringTable, type ResourceStrings } from './compact-object.js';
import { MemoryBudgetError } from './memory-budget.js';
import { releaseListing, reserveListing } from './listing-budget.js';
import {
  afterWatch,
  defaultTimeoutSeconds,
  retryAfterOr,
  watchOnce,
  type LineResult,
  type WatchOutcome,
} from './watch-request.js';
import { WatchSignals } from './watch-signals.js';
import { detached } from '../observability/tracing.js';

import type { WatchStreamOptions } from './watch-stream-options.js';

export type { WatchStreamOptions } from './watch-stream-options.js';

interface ListResponse<T> {
  metadata?: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

const DEFAULT_PAGE_SIZE = 500;
const DEFAULT_IDLE_TIMEOUT_MS = 70_000;
/**
 * Lists a resource (in pages) and then watches it, forever, as one Observable:
 * the listing's objects as ADDED, a SYNCED marker when the listing is complete, then live
 * ADDED/MODIFIED/DELETED events. It never completes by itself and never errors on API
 * failures: it resumes from the last resourceVersion (advanced by bookmarks), backs off on
 * errors, honours `Retry-After`, replaces silent connections, and on 410 Gone relists and
 * emits only the differences (DELETED for objects that vanished, nothing for unchanged ones).
 * Unsubscribing aborts the request in flight.
 */
export function watchResource<T extends KubeObject = KubeObject>(
  client: ApiClient,
  resource: Resource,
  options: WatchStreamOptions<T> = {},
): Observable<WatchEvent<T>> {
  return new Observable<WatchEvent<T>>((subscriber) => {
    const stop = new AbortController();
    const loop = new WatchLoop<T>(client, resource, options, (event) => {
      if (!stop.signal.aborted) subscriber.next(event);
    });
    // Outside whatever traced work subscribed first: a watch outlives it.
    detached(() => loop.run(stop.signal)).catch((error: unknown) => {
      if (!stop.signal.aborted) subscriber.error(error);
    });
    return () => {
      stop.abort();
      loop.close();
    };
  });
}

class WatchLoop<T extends KubeObject> {
  private readonly path: string;
  private readonly id: string;
  private readonly logger: Logger;
  private readonly metrics: Metrics;
  private readonly store: Map<string, T>;
  private readonly backoff: Backoff;
  private readonly labels: Readonly<Record<string, string>>;
  private readonly signals: WatchSignals;
  private readonly healthId: string;
  private readonly status: WatchStatus | undefined;
  private resourceVersion: string | undefined;
  private readonly strings: ResourceStrings;
  private listings = 0;

  constructor(
    private readonly client: ApiClient,
    private readonly resource: Resource,
    private readonly options: WatchStreamOptions<T>,
    private readonly emit: (event: WatchEvent<T>) => void,
  ) {
    this.path = collectionPath(resource, options.namespace);
    const [table, labelValues] = [new StringTable(), new StringTable()];
    this.strings = { apiVersion: apiVersionOf(resource), kind: resource.kind, table, labelValues };
    this.id = resourceId(resource);
    this.labels = Object.freeze({ resource: this.id });
    this.logger = (options.logger ?? silentLogger()).child({
      resource: this.id,
      namespace: options.namespace ?? '*',
    });
    this.metrics = options.metrics ?? noMetrics;
    this.signals = new WatchSignals(this.metrics, this.labels);
    this.store = options.store ?? new Map();
    this.backoff = new Backoff(options.backoff);
    this.healthId = `${this.id} in ${options.namespace ?? 'all namespaces'}${options.labelSelector ? ` (${options.labelSelector})` : ''}#${Math.random().toString(36).slice(2, 8)}`;
    this.status = options.health?.track(this.healthId);
  }

  /** Stops reporting health for this stream. */
  close(): void {
    this.options.health?.untrack(this.healthId);
    this.signals.close();
  }

  private contact(now = Date.now()): void {
    if (this.status) this.status.lastContactAt = now;
    this.signals.contact(now);
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      // Whether a watch request was under way: any end of one (an error included) is a reconnect.
      let watching = false;
      try {
        if (this.resourceVersion === undefined) {
          this.resourceVersion = await this.list(signal);
          // The subscriber may have unsubscribed while the listing was delivered: open no watch then.
          if (signal.aborted) return;
        }
        const started = Date.now();
        watching = true;
        const { outcome, events } = await this.watch(signal);
        if (outcome === 'stopped') return;
        this.metrics.increment('watch_reconnects_total', this.labels);
        const next = afterWatch(outcome, events, Date.now() - started);
        if (next === 'relist') {
          this.logger.info('resourceVersion expired (410 Gone); relisting');
          this.resourceVersion = undefined;
          continue;
        }
        if (outcome === 'stalled')
          this.logger.warn(
            { idleTimeoutMs: this.idleTimeoutMs },
            'watch connection silent for too long; reconnecting',
          );
        if (next === 'back off') await sleep(this.backoff.next(), signal);
      } catch (error) {
        if (signal.aborted) return;
        // The same listing would not fit on a retry either: the stream fails, and the operator says why.
        if (error instanceof MemoryBudgetError) throw error;
        if (watching) this.metrics.increment('watch_reconnects_total', this.labels);
        // Only a watch's 410 means our resourceVersion expired; a 410 from the listing itself (which
        // sends none) is retried with backoff like any other error, not relisted in a hot loop.
        if (isGone(error) && watching) {
          this.logger.info('resourceVersion expired (410 Gone); relisting');
          this.resourceVersion = undefined;
          continue;
        }
        this.metrics.increment('watch_errors_total', this.labels);
        // The backoff grows on 429s too: Retry-After only sets this one delay.
        const delay = retryAfterOr(error, this.backoff.next());
        this.logger.warn(
          {
            err: error instanceof Error ? error.message : String(error),
            status: (error as ApiError).status,
            delayMs: Math.round(delay),
          },
          'list/watch failed; retrying',
        );
        await sleep(delay, signal); // resolves (never rejects) when stopped
      }
    }
  }

  private get idleTimeoutMs(): number {
    return this.options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  }

  /**
   * Lists every page, emitting each page's differences against the store as it arrives (so a page is
   * garbage once delivered, and a listing of 100,000 objects is never held at once), then DELETED for
   * stored objects the listing no longer has, and SYNCED. Returns the list's resourceVersion.
   */
  private async list(signal: AbortSignal): Promise<string> {
    const reservation = { bytes: 0 };
    try {
      return await this.listPages(signal, reservation);
    } finally {
      releaseListing(reservation.bytes);
    }
  }

  private async listPages(signal: AbortSignal, reservation: { bytes: number }): Promise<string> {
    this.metrics.increment('watch_relists_total', this.labels);
    // The UIDs listed so far: what the store holds beyond them at the end has vanished.
    let seen = new Set<string>();
    let continueToken: string | undefined;
    let listVersion: string | undefined;
    let restarts = 0;
    // Only the first listing may come from the cache: a relist must never read older than was delivered.
    const fromCache = this.options.firstListFromCache === true && this.listings++ === 0;
    // Not do/while: `continue` there jumps to the condition, which ended the listing on a restart.
    for (;;) {
      let page: ListResponse<T>;
      try {
        // Each item kept as it is read (without its managedFields), before the next is parsed.
        page = <ListResponse<T>>await this.client.list(
          this.path,
          {
            signal,
            query: {
              limit: this.options.pageSize ?? DEFAULT_PAGE_SIZE,
              continue: continueToken,
              resourceVersion: fromCache && continueToken === undefined ? '0' : undefined,
              labelSelector: this.options.labelSelector,
              fieldSelector: this.options.fieldSelector,
            },
          },
          (item) => this.keep(item as T),
        );
      } catch (error) {
        // An expired continue token: start the listing over. What the partial one delivered is in the
        // store, so only objects changed since are delivered again; nothing vanishes until the end.
        if (continueToken !== undefined && isGone(error) && restarts < 3) {
          restarts += 1;
          seen = new Set();
          continueToken = undefined;
          this.logger.info('list continue token expired; restarting the listing');
          continue;
        }
        throw error;
      }
      this.contact();
      listVersion = page.metadata?.resourceVersion;
      // Checked before anything of the page is delivered: a page without it is not a listing we can resume from.
      if (!listVersion)
        throw new ApiError(0, `GET ${this.path}: list response without metadata.resourceVersion`);
      // Before anything of the listing is delivered: the first page tells how many objects are coming.
      // Measured and stored as they were kept.
      if (continueToken === undefined && reservation.bytes === 0)
        reservation.bytes = this.reserveHeap(page.items, page.metadata?.remainingItemCount);
      this.applyPage(page.items, seen);
      continueToken = page.metadata?.continue || undefined;
      if (continueToken === undefined) break;
    }
    this.applyVanished(seen);
    this.contact();
    if (this.status) this.status.synced = true;
    return listVersion;
  }

  /**
   * Checks, on a listing's first page, that the heap can hold the whole listing, and reserves what the
   * rest of it needs until it is delivered (returned, for the caller to release). Throws {@link MemoryBudgetError}.
   */
  private reserveHeap(listed: T[], remainingItemCount: number | undefined): number {
    if (this.options.memoryBudget === false) return 0;
    const what = `${this.id} in ${this.options.namespace ?? 'all namespaces'}${this.options.labelSelector ? ` (${this.options.labelSelector})` : ''}`;
    try {
      const items = listed.filter((item) => typeof item === 'object' && item !== null);
      // A relist replaces what the store holds: only objects beyond those take more heap.
      return reserveListing(
        items,
        remainingItemCount,
        what,
        this.options.heapStatistics,
        this.store.size,
      );
    } catch (error) {
      if (error instanceof MemoryBudgetError)
        this.logger.error(
          { objects: error.listing.objects, needMb: Math.round(error.verdict.needBytes / 2 ** 20) },
          error.message,
        );
      throw error;
    }
  }

  /** Delivers one listed page's new and changed objects, and notes their UIDs in `seen`. */
  private applyPage(items: T[], seen: Set<string>): void {
    for (const item of items) {
      if (!isTrackable(item)) {
        this.skip('listed object without metadata.uid or resourceVersion');
        continue;
      }
      const uid = item.metadata.uid;
      const previous = this.store.get(uid);
      seen.add(item.metadata.uid);
      if (previous?.metadata?.resourceVersion === item.metadata.resourceVersion) continue;
      this.store.set(uid, item);
      this.deliver({ type: previous ? 'MODIFIED' : 'ADDED', object: item, fromList: true });
    }
  }

  /** DELETED for every stored object a complete listing did not have, then SYNCED. */
  private applyVanished(seen: Set<string>): void {
    for (const [uid, object] of this.store) {
      if (!seen.has(uid)) {
        this.store.delete(uid);
        this.deliver({ type: 'DELETED', object, fromList: true });
      }
    }
    this.emit({ type: 'SYNCED' });
  }

  /** One watch request from the current resourceVersion, until the server ends it, it breaks, goes silent, or we stop. */
  private watch(signal: AbortSignal): Promise<{ outcome: WatchOutcome; events: number }> {
    return watchOnce(
      {
        client: this.client,
        path: this.path,
        query: {
          watch: 'true',
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: 'true',
          timeoutSeconds: (this.options.timeoutSeconds ?? defaultTimeoutSeconds)(),
          labelSelector: this.options.labelSelector,
          fieldSelector: this.options.fieldSelector,
        },
        idleTimeoutMs: this.idleTimeoutMs,
        onContact: () => this.contact(),
        onLine: (line) => this.handleLine(line),
      },
      signal,
    );
  }

  /** Acts on one line: 'event' for a delivered change, 'gone' for 410, an Error to end the watch. */
  private handleLine(line: string): LineResult {
    const parsed = parseWatchLine(line);
    switch (parsed.kind) {
      case 'blank':
        return 'ignored';
      case 'skip':
        this.skip(parsed.why, line);
        return 'ignored';
      case 'bookmark':
        if (parsed.resourceVersion !== undefined) this.resourceVersion = parsed.resourceVersion;
        return 'ignored';
      case 'gone':
        return 'gone';
      case 'error':
        return new ApiError(parsed.code, `watch ${this.path}: ${parsed.message}`, parsed.reason);
      case 'change':
        return this.applyChange(parsed.type, parsed.object as T & TrackableObject);
    }
  }

  private applyChange(
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    object: T & TrackableObject,
  ): LineResult {
    if (type !== 'DELETED') this.signals.delivered(object, Date.now());
    const item = this.keep(object);
    const uid = item.metadata.uid;
    const previous = this.store.get(uid);
    this.resourceVersion = item.metadata.resourceVersion;
    if (type === 'DELETED') {
      this.store.delete(uid);
      this.deliver({ type: 'DELETED', object: item, fromList: false });
      return 'event';
    }
    if (previous?.metadata?.resourceVersion === item.metadata.resourceVersion) return 'ignored';
    this.store.set(uid, item);
    this.deliver({ type: previous ? 'MODIFIED' : 'ADDED', object: item, fromList: false });
    return 'event';
  }

  /**
   * What the stream keeps of an object it reads: no `metadata.managedFields` (unless kept by option;
   * nothing downstream reads them, and they are large), apiVersion/kind filled in (list items of
   * built-in resources lack them), strings shared with the stored copy and the stream's tables.
   */
  private keep<O extends KubeObject>(object: O): O {
    const item = this.options.keepManagedFields ? object : withoutManagedFields(object);
    if (isTrackable(item)) shareStrings(item, this.store.get(item.metadata.uid), this.strings);
    return item;
  }

  private deliver(event: WatchEvent<T>): void {
    this.metrics.increment('watch_events_total', { ...this.labels, type: event.type });
    this.emit(event);
  }

  private skip(why: string, line?: string): void {
    this.metrics.increment('watch_skipped_lines_total', this.labels);
    this.logger.warn({ line: line?.slice(0, 200) }, `${why}; skipped`);
  }
}
