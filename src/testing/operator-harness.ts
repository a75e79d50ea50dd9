import { setTimeout as sleep } from 'node:timers/promises';
import {
  createOperator,
  silentLogger,
  type Operator,
  type OperatorOptions,
} from '../framework/index.js';

/** One API request the operator made. */
export interface RecordedRequest {
  /** The HTTP verb, or `WATCH` for a watch. */
  method: string;
  /** The request path (the query is not part of it). */
  path: string;
  /** The HTTP status of the answer. */
  status: number;
}

/** An operator running in this process, with the requests it made. */
export interface TestOperator {
  /** The running operator. */
  operator: Operator;
  /** Every API request so far, for write-budget assertions. */
  requests: RecordedRequest[];
  /** Stops the operator, giving in-flight work 2 s to finish. */
  stop(): Promise<void>;
}

/**
 * Starts an operator in this process (quiet logs, no leader election, no health server unless asked)
 * and resolves once its initial listings are done.
 *
 * @example
 * ```ts
 * const plane = await TestControlPlane.start();
 * const running = await runOperator({ kubeConfig: plane.kubeConfig(), handlers: [Widgets], namespaces: ['test'] });
 * await waitFor(async () => (await readWidget()).status?.phase === 'Ready', { what: 'the widget to be ready' });
 * await running.stop();
 * ```
 */
export async function runOperator(options: OperatorOptions): Promise<TestOperator> {
  const requests: RecordedRequest[] = [];
  const userHook = options.onRequest;
  const operator = createOperator({
    logger: silentLogger(),
    ...options,
    onRequest: (method, path, status) => {
      requests.push({ method, path, status });
      userHook?.(method, path, status);
    },
  }).start();
  await operator.ready;
  return { operator, requests, stop: () => operator.stop(2_000) };
}

/**
 * Polls `probe` until it returns a truthy value, and returns that value; fails with `what` after
 * `timeoutMs` (default 20 s). For conditions on cluster state that handlers change asynchronously.
 */
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${options.timeoutMs ?? 20_000} ms waiting for ${options.what ?? 'a condition'}`,
      );
    await sleep(options.intervalMs ?? 25);
  }
}
