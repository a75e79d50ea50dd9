/**
 * Timeouts of any length. Node fires a `setTimeout` longer than 2^31-1 ms (about 24.8 days) after
 * 1 ms with only a warning, so a monthly timer or a far-off retry would become a hot loop. Every wait
 * in the framework goes through here: long waits are chained in steps below the limit.
 *
 * Built on the global `setTimeout`, so a fake clock in tests drives it like any other timer.
 */

/** The longest delay Node's `setTimeout` honours. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** A pending long timeout; `clear()` cancels it (idempotent). */
export interface LongTimeout {
  clear(): void;
}

/**
 * Calls `fn` once `ms` milliseconds have passed, however large `ms` is. A non-finite or negative
 * delay counts as 0; `Infinity` never fires.
 */
export function setLongTimeout(fn: () => void, ms: number): LongTimeout {
  let handle: NodeJS.Timeout | undefined;
  let cleared = false;
  if (ms === Infinity) return { clear: () => undefined };
  const total = Number.isFinite(ms) && ms > 0 ? ms : 0;
  // Measured against the clock, not by summing steps, so a late step (busy loop) does not push the end.
  const due = Date.now() + total;
  const step = (): void => {
    if (cleared) return;
    const remaining = due - Date.now();
    if (remaining > MAX_TIMEOUT_MS) {
      handle = setTimeout(step, MAX_TIMEOUT_MS);
      return;
    }
    handle = setTimeout(
      () => {
        if (!cleared) fn();
      },
      Math.max(0, remaining),
    );
  };
  step();
  return {
    clear(): void {
      cleared = true;
      clearTimeout(handle);
    },
  };
}

/** Resolves after `ms` (any length), or as soon as `signal` aborts; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      timeout.clear();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timeout = setLongTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
