import type { Index } from './cache-contract.js';

/**
 * The bookkeeping of one index, pure: each object's contribution (its values by key) by UID, and the
 * view handlers read (the values by key). An object's new contribution replaces its old one whole,
 * so a key it no longer returns loses its value at once.
 */
export class IndexBook<V = unknown> implements Index<V> {
  private readonly contributions = new Map<string, ReadonlyArray<readonly [string, V]>>();
  /** key -> uid -> value: insertion order is the order objects contributed. */
  private readonly byKey = new Map<string, Map<string, V>>();

  /** Sets one object's contribution (undefined or `{}`: it contributes nothing). */
  set(uid: string, contribution: Readonly<Record<string, V>> | undefined): void {
    this.delete(uid);
    const entries = contribution ? Object.entries(contribution) : [];
    if (entries.length === 0) return;
    this.contributions.set(uid, entries);
    for (const [key, value] of entries) {
      let values = this.byKey.get(key);
      if (!values) this.byKey.set(key, (values = new Map()));
      values.set(uid, value);
    }
  }

  /** Removes one object's contribution (it was deleted, or no longer matches). */
  delete(uid: string): void {
    const entries = this.contributions.get(uid);
    if (!entries) return;
    this.contributions.delete(uid);
    for (const [key] of entries) {
      const values = this.byKey.get(key);
      values?.delete(uid);
      if (values?.size === 0) this.byKey.delete(key);
    }
  }

  /** Keeps only the contributions of objects `exists` says are still there (after a complete listing). */
  retain(exists: (uid: string) => boolean): void {
    for (const uid of [...this.contributions.keys()]) if (!exists(uid)) this.delete(uid);
  }

  /** The number of objects contributing. */
  get contributors(): number {
    return this.contributions.size;
  }

  get(key: string): readonly V[] {
    const values = this.byKey.get(key);
    return values ? [...values.values()] : [];
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  keys(): IterableIterator<string> {
    return this.byKey.keys();
  }

  get size(): number {
    return this.byKey.size;
  }
}
