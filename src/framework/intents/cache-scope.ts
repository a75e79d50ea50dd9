import { AsyncLocalStorage } from 'node:async_hooks';
import type { Cache, Indexes } from './cache-contract.js';

/** What a handler context offers of its operator's cache. */
export interface CacheAccess {
  cache: Cache;
  indexes: Indexes;
}

const storage = new AsyncLocalStorage<CacheAccess>();

const outside = (): never => {
  throw new Error(
    'ctx.cache and ctx.indexes are served by a running operator: call the handler through createOperator (or konductor/testing runOperator)',
  );
};

/** Used when no operator's work is running (a handler called directly, in a unit test): throws on use. */
const NO_ACCESS: CacheAccess = { cache: { resource: outside }, indexes: { get: outside } };

/**
 * Runs `fn` (and everything it starts) with one operator's cache and indexes, as EventScope does for
 * Events: every context built in its handlers, timers and daemons reads that operator's cache, and
 * two operators in one process keep theirs apart.
 */
export function runWithCache<T>(access: CacheAccess, fn: () => T): T {
  return storage.run(access, fn);
}

/** The cache and indexes of the operator whose work is running now. */
export function currentCacheAccess(): CacheAccess {
  return storage.getStore() ?? NO_ACCESS;
}
