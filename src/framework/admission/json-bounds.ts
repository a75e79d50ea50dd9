/**
 * Bounds on the size of a JSON text once parsed, checked by one linear pass over its bytes before
 * `JSON.parse` sees it. `JSON.parse` turns three bytes (`{},`) into some 64 bytes of heap, so a
 * body's byte size says little about the memory its parse takes; the number of values does.
 *
 * Why these defaults:
 * - A review holds at most the object of one request (the API server accepts up to 3 MiB) and the
 *   stored object it replaces (etcd keeps up to 1.5 MiB): 4.5 MiB of JSON.
 * - Kubernetes objects take 16–21 bytes of JSON per value (measured on the bundled CRDs and on
 *   Prometheus and etcd objects: a key, quotes, separators and the value), so 4.5 MiB of them is
 *   under 300,000 values. A parse at that limit of the densest shape (empty objects) keeps 17 MB of
 *   heap; one of `[{},{},…]` as large as the body limit (8 MiB) would keep 180 MB.
 * - Objects nest a few dozen levels at most; 200 leaves room for any schema and keeps recursive
 *   walks (diffs, patches) of an admitted object far from the stack's limit.
 */

import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  isJsonSpace,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
} from '../api/json-bytes.js';

/** What a JSON text may hold. */
export interface JsonLimits {
  /** Values (objects, arrays, strings, numbers, literals; object keys not counted). */
  maxValues: number;
  /** Objects and arrays open at once. */
  maxDepth: number;
}

/** The defaults: see the file's comment for why. */
export const DEFAULT_JSON_LIMITS: Readonly<JsonLimits> = { maxValues: 300_000, maxDepth: 200 };

/** Which limit a text went past, and a reason to answer with. */
export interface JsonExcess {
  limit: keyof JsonLimits;
  reason: string;
}

/** Bytes that end a number or literal: whitespace and structural characters. */
function isDelimiter(byte: number): boolean {
  return (
    isJsonSpace(byte) ||
    byte === COMMA ||
    byte === COLON ||
    byte === OPEN_OBJECT ||
    byte === CLOSE_OBJECT ||
    byte === OPEN_ARRAY ||
    byte === CLOSE_ARRAY
  );
}

/**
 * Counts the values and nesting of a JSON text fed in chunks of UTF-8 bytes (every byte it looks at is
 * ASCII, and UTF-8 never uses ASCII bytes inside a multi-byte character, so chunks may split anywhere).
 * It does not check that the text is JSON: `JSON.parse` does that afterwards, and for any text it
 * accepts the count here is exact. No I/O; one pass, constant memory apart from a stack of
 * `maxDepth` bytes.
 *
 * @example
 * ```ts
 * const bounds = new JsonBounds(DEFAULT_JSON_LIMITS);
 * const excess = bounds.feed(Buffer.from('[{},{}]')); // undefined: within limits; bounds.values === 3
 * ```
 */
export class JsonBounds {
  /** Values seen so far. */
  values = 0;
  private depth = 0;
  /** Per open container: 1 for an object, 0 for an array. */
  private readonly stack: Uint8Array;
  private inString = false;
  private escaped = false;
  private inScalar = false;
  /** The next string opens an object key, not a value. */
  private expectKey = false;
  private excess: JsonExcess | undefined;

  constructor(private readonly limits: Readonly<JsonLimits>) {
    this.stack = new Uint8Array(limits.maxDepth + 1);
  }

  /** Scans the next bytes; the first limit gone past, then the same answer for every later chunk. */
  feed(chunk: Uint8Array): JsonExcess | undefined {
    if (this.excess) return this.excess;
    const { maxValues, maxDepth } = this.limits;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
        continue;
      }
      if (isDelimiter(byte)) {
        this.inScalar = false;
        if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
          this.values++;
          if (++this.depth > maxDepth)
            return this.refuse(
              'maxDepth',
              `the request body nests JSON deeper than ${maxDepth} levels`,
            );
          this.stack[this.depth] = byte === OPEN_OBJECT ? 1 : 0;
          this.expectKey = byte === OPEN_OBJECT;
        } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
          if (this.depth > 0) this.depth--;
          this.expectKey = false;
        } else if (byte === COMMA) {
          this.expectKey = this.stack[this.depth] === 1 && this.depth > 0;
        } else if (byte === COLON) {
          this.expectKey = false;
        }
      } else if (byte === QUOTE) {
        this.inString = true;
        if (this.expectKey) this.expectKey = false;
        else this.values++;
      } else if (!this.inScalar) {
        this.inScalar = true;
        this.values++;
      }
      if (this.values > maxValues)
        return this.refuse(
          'maxValues',
          `the request body holds more than ${maxValues.toLocaleString('en-US')} JSON values`,
        );
    }
    return undefined;
  }

  private refuse(limit: keyof JsonLimits, reason: string): JsonExcess {
    this.excess = { limit, reason };
    return this.excess;
  }
}

/** The limit a whole JSON text goes past, if any, and how many values it holds. */
export function checkJsonBounds(
  text: Uint8Array,
  limits: Readonly<JsonLimits> = DEFAULT_JSON_LIMITS,
): { values: number; excess: JsonExcess | undefined } {
  const bounds = new JsonBounds(limits);
  const excess = bounds.feed(text);
  return { values: bounds.values, excess };
}
