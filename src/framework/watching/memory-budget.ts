/**
 * Whether the V8 heap can hold a listing, decided before the listing is held: an operator whose heap
 * cap (the Deployment's `--max-old-space-size`) cannot hold the objects it watches dies of "JavaScript
 * heap out of memory" seconds after each start, a crash loop with no clear cause. Pure: the figures
 * come from the first page of the listing and `v8.getHeapStatistics()`.
 *
 * The cost model is measured (`npm run bench -- scale`, and heap snapshots): a watched object costs
 * about {@link FIXED_BYTES_PER_OBJECT} bytes of bookkeeping (its store entry, the change processor's
 * memory, V8 object headers) plus {@link HEAP_BYTES_PER_JSON_BYTE} per byte of its JSON without
 * managedFields as listed, plus what handling adds to it ({@link HANDLED_BYTES_PER_JSON_BYTE}: the
 * diff-base repeats the object's essence as one JSON string); during catch-up, queued work and
 * in-flight requests add up to {@link CATCH_UP_PEAK_FACTOR} on top. Against a fake API server that
 * never echoed the operator's writes, 100,000 objects of 445 bytes kept 756 bytes each; on a real
 * control plane, where each object comes back carrying its diff-base, the same 100,000 ran out of the
 * 128 MB old space 507 s into their catch-up (about 1.2 KB of heap per object at the time, as was
 * 10,000 under a 26 MB cap), so that listing is refused up front there; the Deployment's 192 MB holds it.
 */

/** Bookkeeping bytes per watched object, whatever its size. */
export const FIXED_BYTES_PER_OBJECT = 300;
/** Heap bytes per byte of an object's JSON (without managedFields), once parsed and stored. */
export const HEAP_BYTES_PER_JSON_BYTE = 1;
/**
 * Heap bytes per byte of listed JSON that handling adds: the diff-base annotation (or status record)
 * holds the object's spec, labels and annotations again, as one string, once the object is handled.
 */
export const HANDLED_BYTES_PER_JSON_BYTE = 0.5;
/** The peak of catch-up over the steady state (measured: 105 MB of heap in use at the peak, 81 MB after, at 100,000 objects). */
export const CATCH_UP_PEAK_FACTOR = 1.3;
/**
 * V8's young generation, which `heap_size_limit` counts on top of the old space (the cap set by
 * `--max-old-space-size`): three 16 MB semi-spaces on 64-bit Node. Only the old space holds what lives
 * long, so that is what a listing is measured against.
 */
export const YOUNG_GENERATION_BYTES = 48 * 2 ** 20;
/** Heap kept free for everything else: requests in flight, handlers' own data, garbage not yet collected. */
export const HEAP_RESERVE_BYTES = 16 * 2 ** 20;

const MB = 2 ** 20;

/** How big a listing is: from its first page (`items.length` + `metadata.remainingItemCount`). */
export interface ListingSize {
  objects: number;
  /** Mean JSON size of the first page's objects, without managedFields. */
  meanJsonBytes: number;
}

/** The heap as `v8.getHeapStatistics()` reports it, and what other listings under way have reserved. */
export interface HeapState {
  /** `heap_size_limit`. */
  limitBytes: number;
  /** `used_heap_size`. */
  usedBytes: number;
  /** Reserved by other listings still being delivered (their objects are not in `usedBytes` yet). */
  reservedBytes: number;
  /** The old space node was started with (`--max-old-space-size`), when it was given one. */
  oldSpaceBytes?: number;
}

/** The verdict on one listing. */
export interface MemoryVerdict {
  fits: boolean;
  /** Heap the listing needs at the peak of catch-up. */
  needBytes: number;
  /** Heap free for it: the old space less what is used, reserved, and {@link HEAP_RESERVE_BYTES}. */
  availableBytes: number;
  /** A `--max-old-space-size` (MB, a multiple of 64) that holds this listing and everything already held. */
  suggestedOldSpaceMb: number;
  /** A container memory limit (MiB) for that cap: twice the cap, as the Deployment sets it. */
  suggestedMemoryLimitMi: number;
}

/** Heap bytes one object of `meanJsonBytes` of listed JSON takes once stored and handled (steady state). */
export function heapBytesPerObject(meanJsonBytes: number): number {
  return (
    FIXED_BYTES_PER_OBJECT +
    (HEAP_BYTES_PER_JSON_BYTE + HANDLED_BYTES_PER_JSON_BYTE) * Math.max(0, meanJsonBytes)
  );
}

/** Heap a listing needs at the peak of its catch-up. */
export function listingNeedBytes(listing: ListingSize): number {
  return Math.ceil(
    Math.max(0, listing.objects) * heapBytesPerObject(listing.meanJsonBytes) * CATCH_UP_PEAK_FACTOR,
  );
}

/**
 * The old space of a heap limit: what `--max-old-space-size` set when it is known (`flagged`), else
 * the limit less the largest young generation.
 */
export function oldSpaceBytes(limitBytes: number, flagged?: number): number {
  if (flagged !== undefined) return Math.min(flagged, limitBytes);
  return Math.max(limitBytes / 2, limitBytes - YOUNG_GENERATION_BYTES);
}

/** Whether `heap` can hold `listing`, and what to set when it cannot. */
export function judgeListing(listing: ListingSize, heap: HeapState): MemoryVerdict {
  const needBytes = listingNeedBytes(listing);
  const availableBytes =
    oldSpaceBytes(heap.limitBytes, heap.oldSpaceBytes) -
    heap.usedBytes -
    heap.reservedBytes -
    HEAP_RESERVE_BYTES;
  // The cap to set is the old space that holds everything: what is used, reserved, this listing and the reserve.
  const wholeBytes = heap.usedBytes + heap.reservedBytes + needBytes + HEAP_RESERVE_BYTES;
  const suggestedOldSpaceMb = Math.max(64, Math.ceil(wholeBytes / MB / 64) * 64);
  return {
    fits: needBytes === 0 || needBytes <= availableBytes,
    needBytes,
    availableBytes,
    suggestedOldSpaceMb,
    suggestedMemoryLimitMi: suggestedOldSpaceMb * 2,
  };
}

/** The message an operator refuses to go on with: what, how much, and what to set. */
export function describeRefusal(
  what: string,
  listing: ListingSize,
  heap: HeapState,
  verdict: MemoryVerdict,
): string {
  const mb = (bytes: number): string => `${Math.max(0, Math.round(bytes / MB))} MB`;
  return (
    `the heap cannot hold the listing of ${what}: ${listing.objects.toLocaleString('en-US')} objects of about ` +
    `${Math.round(listing.meanJsonBytes)} bytes of JSON need about ${mb(verdict.needBytes)} of heap while catching up, and ` +
    `${mb(verdict.availableBytes)} of the ${mb(oldSpaceBytes(heap.limitBytes, heap.oldSpaceBytes))} old space are free; set ` +
    `NODE_OPTIONS=--max-old-space-size=${verdict.suggestedOldSpaceMb} and a container memory limit of at least ` +
    `${verdict.suggestedMemoryLimitMi}Mi, or watch fewer objects (namespaces, label selectors)`
  );
}

/** Raised by a watch whose listing the heap cannot hold; it is not retried (the same listing would not fit). */
export class MemoryBudgetError extends Error {
  override readonly name = 'MemoryBudgetError';

  constructor(
    message: string,
    readonly listing: ListingSize,
    readonly verdict: MemoryVerdict,
  ) {
    super(message);
  }
}
