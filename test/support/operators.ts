import type { KubeConfig } from '@kubernetes/client-node';
import type { OperatorOptions } from '../../src/framework/index.js';
import { runOperator, waitFor, type TestOperator } from '../../src/testing/index.js';
import { type HandlerClass } from '../../src/framework/registry/registry.js';

/** A started in-process operator plus the requests it made, for write-budget assertions. */
export type RunningOperator = TestOperator;

/** Starts an operator on one namespace; `options` adds to that (an `identity`, say). */
export function startOperator(
  kc: KubeConfig,
  namespace: string,
  handlers: readonly HandlerClass[],
  options: Omit<OperatorOptions, 'kubeConfig' | 'handlers' | 'namespaces'> = {},
): Promise<RunningOperator> {
  return runOperator({ ...options, kubeConfig: kc, handlers, namespaces: [namespace] });
}

/** PATCH requests made to one object (events excluded), as `PATCH object` or `PATCH status`. */
export function writesTo(requests: RunningOperator['requests'], name: string): string[] {
  return requests
    .filter((r) => r.method === 'PATCH' && new RegExp(`/${name}(/status)?$`).test(r.path))
    .map((r) => `${r.method} ${r.path.endsWith('/status') ? 'status' : 'object'}`);
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The operator's writes among `requests`, Events and Leases aside (those come and go on their own). */
export function operatorWrites(requests: RunningOperator['requests']): RunningOperator['requests'] {
  return requests.filter(
    (r) =>
      WRITE_METHODS.has(r.method) && !r.path.includes('/events') && !r.path.includes('/leases'),
  );
}

/**
 * Waits until the operator has made no write (Events and Leases aside) for `quietMs`. A spec that
 * reads the cluster sees a write as soon as the API server stores it, before the operator's client
 * records the answer; and a render's status PATCH can follow the change a spec waited for. Take a
 * request mark or a snapshot only after this, so no earlier write is counted after it.
 */
export async function writesQuiet(
  requests: RunningOperator['requests'],
  quietMs = 1_000,
): Promise<void> {
  const writes = (): number => operatorWrites(requests).length;
  let count = writes();
  let since = Date.now();
  await waitFor(
    () => {
      const now = writes();
      if (now !== count) [count, since] = [now, Date.now()];
      return Date.now() - since >= quietMs;
    },
    { what: `the operator to make no write for ${quietMs} ms`, timeoutMs: 30_000 },
  );
}
