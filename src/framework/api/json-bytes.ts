// The ASCII bytes that give JSON its structure, for scanners that read UTF-8 JSON in chunks without
// parsing it: UTF-8 never uses an ASCII byte inside a multi-byte character, so a chunk may end anywhere.

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const COMMA = 0x2c;
export const COLON = 0x3a;

/** Whitespace JSON allows between tokens. */
export function isJsonSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}
