import { setLongTimeout } from './long-timeout.js';

/**
 * A handler attempt ran past the operator's default handler timeout. Its signal was aborted and the
 * framework stopped waiting for it; the attempt counts as a (retryable) failure.
 */
export class AttemptTimeoutError extends Error {
  override readonly name = 'AttemptTimeoutError';

  constructor(readonly timeoutMs: number) {
    super(
      `timed out after ${formatSeconds(timeoutMs)} s (the operator's handler timeout); its signal was aborted`,
    );
  }
}

function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

/**
 * Runs `attempt` with a signal that aborts when `signal` aborts or when `timeoutMs` has passed.
 * Past the limit it rejects with {@link AttemptTimeoutError} at once, without waiting for an attempt
 * that ignores its signal: a hung handler must not hold a worker slot forever. Without `timeoutMs`
 * (or with 0) there is no limit.
 */
export async function withTimeLimit<T>(
  attempt: (signal: AbortSignal) => Promise<T> | T,
  timeoutMs: number | undefined,
  signal?: AbortSignal,
): Promise<T> {
  const abort = new AbortController();
  const forward = (): void => abort.abort(signal?.reason);
  if (signal?.aborted) forward();
  else signal?.addEventListener('abort', forward, { once: true });
  let timer: { clear(): void } | undefined;
  try {
    let running: Promise<T>;
    try {
      running = Promise.resolve(attempt(abort.signal)); // called at once, as without a limit
    } catch (error) {
      running = Promise.reject(error);
    }
    if (timeoutMs === undefined || !(timeoutMs > 0)) return await running;
    const expired = new Promise<never>((_, reject) => {
      timer = setLongTimeout(() => {
        const error = new AttemptTimeoutError(timeoutMs);
        abort.abort(error);
        reject(error);
      }, timeoutMs);
    });
    // The race also handles a later rejection of an abandoned attempt: it never goes unhandled.
    return await Promise.race([running, expired]);
  } finally {
    timer?.clear();
    signal?.removeEventListener('abort', forward);
  }
}
