import type { CacheSpec, IndexOptions, IndexSpec } from '../intents/cache-contract.js';
import { METADATA } from './metadata.js';

/** Keys under which `@on.cache` and `@on.index` declarations are stored in a class's decorator metadata. */
export const CACHES = Symbol.for('konductor.caches');
export const INDEXES = Symbol.for('konductor.indexes');

/** An index as `@on.index` records it on a class, before the class is instantiated. */
export interface IndexDeclaration {
  resource: IndexSpec['resource'];
  options: IndexOptions;
  method: string | symbol;
}

type Metadata = Record<symbol, unknown[] | undefined>;

/** Adds a declaration to the class's own list under `key`, so a subclass adds to (not mutates) its parent's. */
export function declareIn<D>(metadata: object | undefined, key: symbol, declaration: D): void {
  if (!metadata)
    throw new Error(
      'decorator metadata is unavailable: import "konductor" before defining handler classes',
    );
  const record = metadata as Metadata;
  const own = Object.prototype.hasOwnProperty.call(record, key)
    ? record[key]!
    : [...(record[key] ?? [])];
  own.push(declaration);
  record[key] = own;
}

function declared<D>(cls: object, key: symbol): D[] {
  const metadata = (cls as Record<symbol, Metadata | undefined>)[METADATA];
  return (metadata?.[key] as D[] | undefined) ?? [];
}

/** The `@on.cache` declarations of a class. */
export function cacheDeclarationsOf(cls: object): CacheSpec[] {
  return declared<CacheSpec>(cls, CACHES);
}

/** The `@on.index` declarations of a class. */
export function indexDeclarationsOf(cls: object): IndexDeclaration[] {
  return declared<IndexDeclaration>(cls, INDEXES);
}
