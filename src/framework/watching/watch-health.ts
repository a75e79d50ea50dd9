/** What the health endpoints need to know about one watch. */
export interface WatchStatus {
  /** The first listing has been delivered. */
  synced: boolean;
  /** Last time the server answered anything (a page, a watch line, an opened watch). */
  lastContactAt: number;
}

/**
 * A registry of the operator's watches, for `/healthz` (no watch stalled) and `/readyz` (all listed).
 * The watch streams write to it; nothing in the watch layer depends on who reads it.
 */
export class WatchHealth {
  private readonly watches = new Map<string, WatchStatus>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Starts tracking a watch; returns the status object the stream updates. */
  track(id: string): WatchStatus {
    const status: WatchStatus = { synced: false, lastContactAt: this.now() };
    this.watches.set(id, status);
    return status;
  }

  untrack(id: string): void {
    this.watches.delete(id);
  }

  /** Ids of watches that have not heard from the server for longer than `thresholdMs`. */
  stalled(thresholdMs: number): string[] {
    const now = this.now();
    return [...this.watches]
      .filter(([, status]) => now - status.lastContactAt > thresholdMs)
      .map(([id]) => id);
  }

  /** Ids of watches still waiting for their first listing. */
  unsynced(): string[] {
    return [...this.watches].filter(([, status]) => !status.synced).map(([id]) => id);
  }

  get size(): number {
    return this.watches.size;
  }
}
