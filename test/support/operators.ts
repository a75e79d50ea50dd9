import type { KubeConfig } from '@kubernetes/client-node';
import type { HandlerClass, OperatorOptions } from '../../src/framework/index.js';
import { runOperator, type TestOperator } from '../../src/testing/index.js';

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
