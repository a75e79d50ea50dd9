// Reading a response's body: whole, as JSON, or a list item by item.
import type { IncomingMessage } from 'node:http';
import { ListBodyReader } from './list-body.js';

/** The body could not be read off the wire: `cause` is the connection's error. */
export class BodyReadError extends Error {}

/** Rejects with a {@link BodyReadError} when the connection fails or the response is aborted. */
function onFailure(response: IncomingMessage, reject: (error: BodyReadError) => void): void {
  response.on('error', (error) => reject(new BodyReadError(error.message, { cause: error })));
  response.once('aborted', () => {
    const error = new Error('response aborted');
    reject(new BodyReadError(error.message, { cause: error }));
  });
}

/** A response's whole body as text. */
export function readBody(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    onFailure(response, reject);
  });
}

/** A 2xx answer read: its value, its size, or the text that is not JSON. */
export interface Answer<T> {
  /** The parsed body (undefined when empty or not JSON). */
  value: T;
  /** The body's size in bytes. */
  bytes: number;
  /** Set when the body is not JSON. */
  unparsable?: {
    /** The body, when it was read whole. */
    text?: string;
    /** Why it did not parse. */
    error: unknown;
  };
}

/** A list read item by item: the rest of the document, with its items as kept. */
export type KeptList<T> = Record<string, unknown> & {
  /** The list's items, each as `keep` returned it. */
  items: T[];
};

/** The body parsed as JSON (undefined when empty); text that is not JSON is returned, not thrown. */
export async function readJson<T>(response: IncomingMessage): Promise<Answer<T>> {
  const text = await readBody(response);
  const bytes = Buffer.byteLength(text);
  if (text === '') return { value: undefined as T, bytes };
  try {
    return { value: JSON.parse(text) as T, bytes };
  } catch (error) {
    return { value: undefined as T, bytes, unparsable: { text, error } };
  }
}

/**
 * Reads a list's body item by item. JSON that is not a list is returned as unparsable (the rest of
 * the body is not read); an error `keep` throws rejects as it is.
 */
export function readList<T>(
  response: IncomingMessage,
  keep: (item: unknown) => T,
): Promise<Answer<KeptList<T>>> {
  return new Promise((resolve, reject) => {
    const reader = new ListBodyReader(keep);
    const fail = (error: unknown) => {
      if (error instanceof SyntaxError)
        resolve({ value: { items: [] }, bytes: reader.bytes, unparsable: { error } });
      else reject(error);
      // After settling: destroying reports the response aborted, which would settle it first.
      response.destroy();
    };
    response.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (error) {
        fail(error);
      }
    });
    response.once('end', () => {
      try {
        resolve({ value: reader.end(), bytes: reader.bytes });
      } catch (error) {
        fail(error);
      }
    });
    onFailure(response, reject);
  });
}
