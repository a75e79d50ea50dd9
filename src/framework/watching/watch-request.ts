import type { IncomingMessage } from 'node:http';
import type { ApiClient, Query } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';

/** How one watch request ended. */
export type WatchOutcome = 'ended' | 'gone' | 'stalled' | 'stopped';

/** What the stream does with one line: a delivered change, a 410, nothing, or an error that ends the watch. */
export type LineResult = 'event' | 'gone' | 'ignored' | Error;

/** One watch request: where, with which query, and what to do with what arrives. */
export interface WatchRequest {
  client: ApiClient;
  path: string;
  query: Query;
  /** A connection (or a wait for the response) silent for this long ends the request as 'stalled'. */
  idleTimeoutMs: number;
  /** Called whenever the server answers anything (for health checks). */
  onContact(): void;
  /** Handles one line (without its newline). */
  onLine(line: string): LineResult;
}

/**
 * Runs one watch request until the server ends it, it breaks, goes silent, or `signal` aborts.
 * Resolves with the outcome and the number of delivered events; rejects with the error that ended it.
 */
export function watchOnce(
  request: WatchRequest,
  signal: AbortSignal,
): Promise<{ outcome: WatchOutcome; events: number }> {
  const local = new AbortController();
  const onStop = (): void => local.abort();
  signal.addEventListener('abort', onStop, { once: true });
  // The idle watchdog also covers the wait for the response: a request that never gets one
  // (a black-holed connection) would otherwise hang forever, as watches have no request timeout.
  let stalled = false;
  const waiting = setTimeout(() => {
    stalled = true;
    local.abort();
  }, request.idleTimeoutMs);
  waiting.unref?.();
  const cleanup = (): void => {
    clearTimeout(waiting);
    signal.removeEventListener('abort', onStop);
  };
  const opened = request.client.stream(request.path, {
    signal: local.signal,
    query: request.query,
  });
  return opened.then(
    (response) => {
      clearTimeout(waiting);
      request.onContact();
      return consume(request, response, local, signal).finally(cleanup);
    },
    (error: unknown) => {
      cleanup();
      if (signal.aborted) return { outcome: 'stopped' as const, events: 0 };
      // An HTTP error status that arrived as the watchdog fired is still that error (e.g. 410).
      if (stalled && !(error instanceof ApiError && error.status > 0))
        return { outcome: 'stalled' as const, events: 0 };
      throw error;
    },
  );
}

/** Reads a watch response line by line, with an idle watchdog re-armed by every chunk. */
function consume(
  request: WatchRequest,
  response: IncomingMessage,
  local: AbortController,
  signal: AbortSignal,
): Promise<{ outcome: WatchOutcome; events: number }> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let events = 0;
    let outcome: WatchOutcome | undefined;
    let failure: Error | undefined;
    let idleTimer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      clearTimeout(idleTimer);
      if (signal.aborted) resolve({ outcome: 'stopped', events });
      else if (failure) reject(failure);
      else resolve({ outcome: outcome ?? 'ended', events });
    };
    const end = (why: WatchOutcome | Error): void => {
      if (why instanceof Error) failure ??= why;
      else outcome ??= why;
      local.abort();
      response.destroy();
    };
    const handle = (line: string): void => {
      const result = request.onLine(line);
      if (result === 'event') events += 1;
      else if (result instanceof Error || result === 'gone') end(result);
    };
    const armIdle = (): void => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => end('stalled'), request.idleTimeoutMs);
      idleTimer.unref?.();
    };
    armIdle();
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      request.onContact();
      armIdle();
      buffer += chunk;
      let newline = buffer.indexOf('\n');
      while (newline >= 0 && outcome === undefined && failure === undefined) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        handle(line);
        newline = buffer.indexOf('\n');
      }
    });
    response.once('end', () => {
      // A final line without a newline still counts.
      if (buffer.trim() && outcome === undefined && failure === undefined) handle(buffer);
      buffer = '';
    });
    response.once('close', () => {
      if (!response.complete && outcome === undefined && failure === undefined && !signal.aborted) {
        failure = ApiError.fromNetwork(
          new Error('watch stream cut before it ended'),
          `GET ${request.path}`,
        );
      }
      finish();
    });
    response.on('error', () => undefined); // errors end the stream through 'close'; never let one go unhandled
  });
}

/** The delay the server asked for with `Retry-After` (exactly, even 0), else `backoffMs`. */
export function retryAfterOr(error: unknown, backoffMs: number): number {
  const retryAfter = error instanceof ApiError ? error.retryAfterSeconds : undefined;
  return retryAfter !== undefined ? Math.max(retryAfter * 1000, 0) : backoffMs;
}

const VERY_SHORT_WATCH_MS = 1_000;

/** A watch request's server-side timeout: random in [300, 600) s, like client-go's. */
export function defaultTimeoutSeconds(): number {
  return 300 + Math.floor(Math.random() * 300);
}

/**
 * What the loop does once a watch request has ended (not stopped): relist after 410 Gone; back off
 * after a silent connection, or after a watch that ended at once with nothing in it
 * (kubernetes#104171), so as not to busy-loop; otherwise resume at once.
 */
export function afterWatch(
  outcome: Exclude<WatchOutcome, 'stopped'>,
  events: number,
  durationMs: number,
): 'relist' | 'back off' | 'resume' {
  if (outcome === 'gone') return 'relist';
  if (outcome === 'stalled' || (events === 0 && durationMs < VERY_SHORT_WATCH_MS))
    return 'back off';
  return 'resume';
}
