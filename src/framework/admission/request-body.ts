import type { IncomingMessage } from 'node:http';
import { setLongTimeout } from '../clock/long-timeout.js';
import { JsonBounds, type JsonLimits } from './json-bounds.js';
import type { SharedBudget } from './shared-budget.js';

/** A request body refused while it was read: the status and reason to answer with. */
export class BodyRefused extends Error {
  constructor(
    readonly status: 400 | 408 | 413 | 429,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** What one request body may be. */
export interface BodyLimits {
  /** Bytes. */
  maxBytes: number;
  /** Values and nesting of its JSON. */
  json: Readonly<JsonLimits>;
  /** How long after its headers the whole body must have arrived. */
  deadlineMs: number;
}

/** What one request holds of the server's budgets, given back once it is answered. */
export interface Held {
  /** The remote address, the key of its share. */
  source: string;
  bytes: number;
}

/** A body read whole, and the number of JSON values in it. */
export interface Body {
  text: string;
  values: number;
}

/**
 * Reads a request body within `limits`, taking each chunk's bytes from `budget` (recorded in `held`)
 * and counting its JSON values as it arrives, so a body past a limit is refused at the chunk that
 * crosses it, never buffered whole. Rejects with {@link BodyRefused}: 413 past `maxBytes` (also when
 * `Content-Length` says so) or `json.maxValues`, 400 past `json.maxDepth`, 429 when the budget or
 * the source's share of it has no room, 408 when the body is not complete `deadlineMs` after reading
 * began. Any other rejection is the client going away.
 */
export function readBody(
  request: IncomingMessage,
  limits: BodyLimits,
  budget: SharedBudget,
  held: Held,
): Promise<Body> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > limits.maxBytes) {
      reject(new BodyRefused(413, 'the request body is too large'));
      return;
    }
    const bounds = new JsonBounds(limits.json);
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      deadline.clear();
      request.off('data', onData);
      outcome();
    };
    const fail = (error: Error): void => finish(() => reject(error));
    const deadline = setLongTimeout(
      () =>
        fail(
          new BodyRefused(
            408,
            `the request body did not arrive within ${limits.deadlineMs} ms of its headers`,
          ),
        ),
      limits.deadlineMs,
    );
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limits.maxBytes)
        return fail(new BodyRefused(413, 'the request body is too large'));
      const excess = bounds.feed(chunk);
      if (excess)
        return fail(new BodyRefused(excess.limit === 'maxValues' ? 413 : 400, excess.reason));
      if (!budget.take(held.source, chunk.length))
        return fail(new BodyRefused(429, 'too many reviews in flight; retry'));
      held.bytes += chunk.length;
      chunks.push(chunk);
    };
    request.on('data', onData);
    request.on('end', () =>
      finish(() =>
        resolve({ text: Buffer.concat(chunks).toString('utf8'), values: bounds.values }),
      ),
    );
    request.on('error', fail);
    request.on('close', () =>
      fail(new Error('the client closed the connection before the request body was complete')),
    );
  });
}
