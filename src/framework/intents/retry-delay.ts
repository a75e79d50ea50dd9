import { exponentialDelayMs } from '../clock/backoff.js';
import { TemporaryError } from './errors.js';

/** After a failure, the first retry comes after 1 s, doubling up to 60 s. */
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;

/**
 * How long to wait before trying again after the `attempt`-th failure in a row, `error`: a
 * TemporaryError's own delay, else the handler's fixed `backoffSeconds` when it sets one, else 1 s
 * doubling up to 60 s. Shared by daemons (restarts) and owned handlers (re-runs of the owner).
 */
export function retryDelayMs(
  error: Error | undefined,
  attempt: number,
  backoffSeconds?: number,
): number {
  if (error instanceof TemporaryError) return error.delay * 1000;
  if (backoffSeconds !== undefined) return backoffSeconds * 1000;
  return exponentialDelayMs(attempt, FIRST_RETRY_MS, MAX_RETRY_MS);
}
