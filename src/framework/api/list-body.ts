// A list response's body read as it arrives, one item at a time. Parsed whole, a listing of tens of
// thousands of objects sits in the heap twice over (the body as one string and every object with its
// managedFields) before anything is dropped: 33,000 small objects took some 150 MB, most of the
// Deployment's old space. Read item by item, only what each item is kept as stays.

import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COMMA,
  isJsonSpace,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
} from './json-bytes.js';
import type { KeptList } from './response-body.js';
import { isPlainObject } from '../objects/plain-object.js';

const ITEMS = Buffer.from('items');
const ESCAPE = Buffer.from('\\');

/**
 * Splits a JSON list body (`{"metadata": {...}, "items": [...], ...}`) into its items, parsed one at a
 * time as chunks arrive and kept as `keep` returns them, and the rest of the document. It only tracks
 * strings and nesting: each item and the rest are parsed by `JSON.parse`, so malformed JSON fails as it
 * would parsed whole.
 */
export class ListBodyReader<T> {
  private readonly items: T[] = [];
  private readonly rest: Buffer[] = [];
  /** Bytes read so far. */
  bytes = 0;
  private depth = 0;
  private inString = false;
  /** The byte before was a backslash in a string (it may end one chunk and escape the next's first). */
  private escaped = false;
  private topIsObject = false;
  /** Inside the top-level `items` array; `sawItems` once it has been read. */
  private inItems = false;
  private sawItems = false;
  /** The parts of the item being read and what kind of JSON value it is. */
  private item: Buffer[] | undefined;
  private itemKind: 'container' | 'string' | 'bare' = 'container';
  /**
   * The first bytes of a string of the top-level object being read (a key, if an array follows), to
   * recognise `items`: no more than its length, however long the string.
   */
  private key: Buffer[] | undefined;
  private keyBytes = 0;
  private lastStringIsItems = false;

  constructor(private readonly keep: (item: unknown) => T) {}

  /** Reads the next chunk of the body; throws a SyntaxError for JSON that cannot be a list. */
  push(chunk: Buffer): void {
    this.bytes += chunk.length;
    let from = 0; // where the part of `chunk` not yet given to the rest or an item begins
    // The next of each at or after `i`, found again only once passed: a string full of escapes is
    // read in one pass, not searched to its end once per escape.
    let backslash = chunk.indexOf(BACKSLASH);
    let quote = chunk.indexOf(QUOTE);
    let i = 0;
    while (i < chunk.length) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          i += 1;
          continue;
        }
        if (backslash !== -1 && backslash < i) backslash = chunk.indexOf(BACKSLASH, i);
        if (quote !== -1 && quote < i) quote = chunk.indexOf(QUOTE, i);
        if (backslash !== -1 && (quote === -1 || backslash < quote)) {
          // A key with an escape is not spelt `items` byte for byte, so it is not recognised as it.
          this.keyPart(ESCAPE);
          this.escaped = true;
          i = backslash + 1;
          continue;
        }
        if (quote === -1) {
          this.keyPart(chunk.subarray(i));
          break;
        }
        this.keyPart(chunk.subarray(i, quote));
        this.inString = false;
        i = quote + 1;
        if (this.key) {
          this.lastStringIsItems =
            this.keyBytes === ITEMS.length && Buffer.concat(this.key).equals(ITEMS);
          this.key = undefined;
        }
        if (this.item && this.itemKind === 'string') from = this.endItem(chunk, from, i);
        continue;
      }
      const byte = chunk[i]!;
      if (this.item && this.itemKind === 'bare' && this.depth === 2) {
        // A number or literal ends at the first byte that cannot be part of it.
        if (byte === COMMA || byte === CLOSE_ARRAY || isJsonSpace(byte))
          from = this.endItem(chunk, from, i);
      }
      if (this.inItems && this.depth === 2 && !this.item && byte !== COMMA && !isJsonSpace(byte)) {
        if (byte !== CLOSE_ARRAY) {
          from = i; // what came since the last item is a separator: dropped
          this.item = [];
          this.itemKind =
            byte === OPEN_OBJECT || byte === OPEN_ARRAY
              ? 'container'
              : byte === QUOTE
                ? 'string'
                : 'bare';
        }
      }
      switch (byte) {
        case QUOTE:
          this.inString = true;
          if (this.depth === 1 && this.topIsObject) {
            this.key = [];
            this.keyBytes = 0;
          }
          break;
        case OPEN_OBJECT:
        case OPEN_ARRAY:
          if (this.depth === 0) this.topIsObject = byte === OPEN_OBJECT;
          this.depth += 1;
          if (
            byte === OPEN_ARRAY &&
            this.depth === 2 &&
            this.topIsObject &&
            this.lastStringIsItems
          ) {
            // A whole parse would keep the last; no API server sends two.
            if (this.sawItems) throw new SyntaxError('a list body with two `items` arrays');
            this.rest.push(Buffer.from(chunk.subarray(from, i + 1)));
            from = i + 1;
            this.inItems = true;
            this.sawItems = true;
          }
          break;
        case CLOSE_OBJECT:
        case CLOSE_ARRAY:
          if (this.inItems && this.depth === 2 && !this.item) {
            from = i; // the separators before it are dropped; the bracket closes `"items":[` in the rest
            this.inItems = false;
          }
          this.depth -= 1;
          if (this.depth < 0) throw new SyntaxError('unbalanced brackets in a list body');
          if (this.item && this.itemKind === 'container' && this.depth === 2)
            from = this.endItem(chunk, from, i + 1);
          break;
      }
      i += 1;
    }
    if (this.item) this.item.push(chunk.subarray(from));
    else if (!this.inItems) this.rest.push(Buffer.from(chunk.subarray(from)));
  }

  /** The whole list once the body has ended: the rest of the document with the kept items. */
  end(): KeptList<T> {
    if (this.inString || this.depth !== 0 || this.item)
      throw new SyntaxError('the list body ended before its JSON did');
    const text = Buffer.concat(this.rest).toString('utf8');
    const list: unknown = text.trim() === '' ? undefined : JSON.parse(text);
    if (!isPlainObject(list)) throw new SyntaxError('a list body is a JSON object');
    // An `items` not recognised as it streamed by (an escaped key) is kept as parsed whole.
    const items = this.sawItems
      ? this.items
      : Array.isArray(list.items)
        ? list.items.map((item) => this.keep(item))
        : [];
    return { ...list, items };
  }

  private keyPart(part: Buffer): void {
    if (!this.key) return;
    this.keyBytes += part.length;
    if (this.keyBytes <= ITEMS.length) this.key.push(part);
  }

  /** Parses the item ending at `end` (exclusive) in `chunk`; returns where the next part begins. */
  private endItem(chunk: Buffer, from: number, end: number): number {
    const parts = this.item!;
    parts.push(chunk.subarray(from, end));
    this.item = undefined;
    const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    this.items.push(this.keep(JSON.parse(bytes.toString('utf8'))));
    return end;
  }
}
