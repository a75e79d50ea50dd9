// Reading a response's body: whole, as JSON, or a list item by item.
import type { IncomingMessage } from 'node:http';
import { ListBodyReader } from './list-body.js';

/** A response's whole body as text. */
export function readBody(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    response.on('error', reject);
    response.once('aborted', () => reject(new Error('response aborted')));
  });
}

/** A 2xx answer read: its value, its size, or the text that is not JSON. */
export interface Answer<T> {
  value: T;
  bytes: number;
  unparsable?: { text?: string; error: unknown };
}

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

/** Reads a list's body item by item; rejects with a SyntaxError for JSON that is not a list. */
export function readList<T>(
  response: IncomingMessage,
  keep: (item: unknown) => T,
): Promise<Answer<{ items: T[] } & Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const reader = new ListBodyReader(keep);
    response.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (error) {
        response.destroy();
        reject(error);
      }
    });
    response.once('end', () => {
      try {
        resolve({ value: reader.end(), bytes: reader.bytes });
      } catch (error) {
        reject(error);
      }
    });
    response.on('error', reject);
    response.once('aborted', () => reject(new Error('response aborted')));
  });
}
