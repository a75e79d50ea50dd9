import { isDeepStrictEqual } from 'node:util';

/**
 * Whether two values are the same JSON document, whatever the order of their keys. Objects read back
 * from the API server have their keys sorted (it stores them as Go maps), while the ones an operator
 * builds keep the order they were written in; comparing their `JSON.stringify` text would call every
 * read-back status changed and write it again on each pass. Keys holding `undefined` count as absent,
 * as they are when sent.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(asJson(a), asJson(b));
}

function asJson(value: unknown): unknown {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}
