import type { Clock } from '../clock/clock.js';

/**
 * Runs `work` with a signal that aborts after `ms` of `clock` or with `parent`, and settles by then
 * even if `work` ignores the signal: a hung Lease request must not keep a replica leading past its
 * renew deadline.
 */
export async function withDeadline<T>(
  clock: Clock,
  parent: AbortSignal | undefined,
  ms: number,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = new AbortController();
  const onParentAbort = (): void => controller.abort(parent?.reason);
  parent?.addEventListener('abort', onParentAbort, { once: true });
  if (parent?.aborted) onParentAbort();
  // The clock's sleep also resolves when the timer is cancelled (once `work` settled): no deadline then.
  void clock.sleep(ms, timer.signal).then(() => {
    if (!timer.signal.aborted) controller.abort(new Error(`no answer within ${ms} ms`));
  });
  try {
    return await new Promise<T>((resolve, reject) => {
      const onAbort = (): void => reject(controller.signal.reason);
      if (controller.signal.aborted) return onAbort();
      controller.signal.addEventListener('abort', onAbort, { once: true });
      work(controller.signal).then(resolve, reject);
    });
  } finally {
    timer.abort();
    parent?.removeEventListener('abort', onParentAbort);
  }
}
