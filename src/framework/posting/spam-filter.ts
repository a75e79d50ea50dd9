import { LruMap } from './lru-map.js';

/** Settings of a {@link SpamFilter}; the defaults are client-go's EventCorrelator numbers. */
export interface SpamFilterOptions {
  /** Events an object may have written at once. Default 25. */
  burst?: number;
  /** One more write is allowed every `refillMs`, up to `burst`. Default 300 000 (5 minutes). */
  refillMs?: number;
  /** Objects whose buckets are remembered; the least recently seen is forgotten (and starts full again). Default 4096. */
  maxObjects?: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A token bucket per involved object, as client-go's spam filter: an object that keeps producing
 * Events gets `burst` writes, then one per `refillMs`. Pure: the caller passes the time.
 */
export class SpamFilter {
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly buckets: LruMap<string, Bucket>;

  constructor(options: SpamFilterOptions = {}) {
    this.burst = options.burst ?? 25;
    this.refillMs = options.refillMs ?? 300_000;
    if (!(this.burst >= 1) || !(this.refillMs > 0))
      throw new Error(
        `the Event rate limit needs a burst of 1 or more and a positive refill interval (got burst ${this.burst}, refill ${this.refillMs} ms)`,
      );
    this.buckets = new LruMap(options.maxObjects ?? 4096);
  }

  /** Takes one write from `objectKey`'s bucket at `now` (epoch ms); false when it is empty. */
  allow(objectKey: string, now: number): boolean {
    const bucket = this.buckets.get(objectKey) ?? { tokens: this.burst, at: now };
    // A clock that went back refills nothing rather than draining the bucket.
    bucket.tokens = Math.min(
      this.burst,
      bucket.tokens + Math.max(0, now - bucket.at) / this.refillMs,
    );
    bucket.at = now;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    this.buckets.set(objectKey, bucket);
    return allowed;
  }
}
