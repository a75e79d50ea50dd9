/**
 * An amount (bytes of request bodies, parsed JSON values) held by the requests in flight together,
 * of which one source (a remote address) may hold at most a share: one caller that fills its share
 * leaves the rest to the others, so a client on the Pod network cannot take all of it from the API
 * server. No I/O.
 */
export class SharedBudget {
  private used = 0;
  private readonly bySource = new Map<string, number>();

  /**
   * @param limit - most held by all sources together
   * @param share - most held by one source (capped at `limit`)
   */
  constructor(
    readonly limit: number,
    readonly share: number,
  ) {}

  /** What all sources hold now. */
  get held(): number {
    return this.used;
  }

  /** What one source holds now. */
  heldBy(source: string): number {
    return this.bySource.get(source) ?? 0;
  }

  /**
   * Takes `amount` for `source` when it fits both the whole budget and the source's share; false,
   * taking nothing, otherwise.
   */
  take(source: string, amount: number): boolean {
    const mine = this.heldBy(source);
    if (this.used + amount > this.limit || mine + amount > Math.min(this.share, this.limit))
      return false;
    this.used += amount;
    this.bySource.set(source, mine + amount);
    return true;
  }

  /** Gives back what `source` took (a source's entry goes once it holds nothing, so addresses do not pile up). */
  give(source: string, amount: number): void {
    if (amount <= 0) return;
    const left = this.heldBy(source) - amount;
    this.used -= amount;
    if (left > 0) this.bySource.set(source, left);
    else this.bySource.delete(source);
  }
}
