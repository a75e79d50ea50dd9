/**
 * A token bucket per key (a remote address): `ratePerSecond` requests a second, bursts up to the
 * same number. Keys idle for a minute are forgotten, so the map cannot grow without bound.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly ratePerSecond: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one request's token for `key`; false when the key is over its rate. */
  take(key: string): boolean {
    const now = this.now();
    if (this.buckets.size > 10_000) this.forgetIdle(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.ratePerSecond, at: now };
    bucket.tokens = Math.min(
      this.ratePerSecond,
      bucket.tokens + ((now - bucket.at) / 1000) * this.ratePerSecond,
    );
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  private forgetIdle(now: number): void {
    for (const [key, bucket] of this.buckets)
      if (now - bucket.at > 60_000) this.buckets.delete(key);
  }
}
