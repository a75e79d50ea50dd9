import { getHeapStatistics } from 'node:v8';
import type { KubeObject } from '../objects/kube-object.js';
import {
  describeRefusal,
  judgeListing,
  listingNeedBytes,
  MemoryBudgetError,
  type HeapState,
  type ListingSize,
} from './memory-budget.js';

/** Heap reserved by listings being delivered in this process, so concurrent listings do not each count the same free heap. */
let reserved = 0;

function v8Heap(): Pick<HeapState, 'limitBytes' | 'usedBytes' | 'oldSpaceBytes'> {
  const stats = getHeapStatistics();
  return {
    limitBytes: stats.heap_size_limit,
    usedBytes: stats.used_heap_size,
    oldSpaceBytes: (flaggedOldSpace ??= { bytes: oldSpaceFlag() }).bytes,
  };
}

let flaggedOldSpace: { bytes: number | undefined } | undefined;

/** `--max-old-space-size` in node's flags or NODE_OPTIONS (node's own flags win), in bytes. */
function oldSpaceFlag(): number | undefined {
  let mb: number | undefined;
  const flags = [...(process.env.NODE_OPTIONS ?? '').split(/\s+/), ...process.execArgv];
  for (const [i, flag] of flags.entries()) {
    // `--max-old-space-size=192` or `--max-old-space-size 192`; 0 is node's "no cap" (its default).
    const match = /^--max[-_]old[-_]space[-_]size(?:=(\d+))?$/.exec(flag);
    if (match) mb = Number(match[1] ?? flags[i + 1]) || undefined;
  }
  return mb === undefined ? undefined : mb * 2 ** 20;
}

/** Items measured for a page's mean JSON size: a listing from the watch cache comes as one page of every object. */
export const SIZE_SAMPLE = 500;

/** The mean JSON size of `items`, measured on at most {@link SIZE_SAMPLE} of them, evenly spaced. */
export function meanJsonBytes(items: readonly unknown[]): number {
  const measured = Math.min(items.length, SIZE_SAMPLE);
  let bytes = 0;
  for (let k = 0; k < measured; k++)
    bytes += JSON.stringify(items[Math.floor((k * items.length) / measured)]).length;
  return measured === 0 ? 0 : bytes / measured;
}

/**
 * On a listing's first page (its objects as the stream keeps them, before any is delivered): checks
 * that the heap can hold the whole listing, `items.length + remainingItemCount` objects of the page's
 * mean JSON size (measured on a sample) less the `alreadyHeld` ones a relist replaces, and reserves what the rest of it
 * needs. Returns the bytes reserved, for {@link releaseListing} once the listing is delivered. Throws
 * {@link MemoryBudgetError} (with the message to show) when the listing does not fit.
 */
export function reserveListing(
  items: readonly KubeObject[],
  remainingItemCount: number | undefined,
  what: string,
  heapStatistics: () => Pick<HeapState, 'limitBytes' | 'usedBytes' | 'oldSpaceBytes'> = v8Heap,
  alreadyHeld = 0,
): number {
  if (items.length === 0) return 0;
  const listed =
    items.length +
    (typeof remainingItemCount === 'number' && remainingItemCount > 0 ? remainingItemCount : 0);
  // A relist replaces the objects the stream already holds (they are in the heap's use): only the rest is new.
  const objects = Math.max(0, listed - alreadyHeld);
  const listing: ListingSize = { objects, meanJsonBytes: meanJsonBytes(items) };
  const heap: HeapState = { ...heapStatistics(), reservedBytes: reserved };
  const verdict = judgeListing(listing, heap);
  if (!verdict.fits)
    throw new MemoryBudgetError(describeRefusal(what, listing, heap, verdict), listing, verdict);
  // What the first page holds is already in the heap's use; the rest is reserved.
  const rest = listingNeedBytes({ ...listing, objects: Math.max(0, objects - items.length) });
  reserved += rest;
  return rest;
}

/** Releases what {@link reserveListing} reserved: the listing is delivered (its objects are in the heap's use now) or abandoned. */
export function releaseListing(bytes: number): void {
  reserved = Math.max(0, reserved - bytes);
}
