import type { KubeConfig } from '@kubernetes/client-node';
import type { HandlerClass } from '../../src/framework/index.js';
import { runOperator, type TestOperator } from '../../src/testing/index.js';

/** A started in-process operator plus the requests it made, for write-budget assertions. */
export type RunningOperator = TestOperator;

export function startOperator(kc: KubeConfig, namespace: string, handlers: readonly HandlerClass[]): Promise<RunningOperator> {
  return runOperator({ kubeConfig: kc, handlers, namespaces: [namespace] });
}

/** PATCH requests made to one object (events excluded), as `PATCH object` or `PATCH status`. */
export function writesTo(requests: RunningOperator['requests'], name: string): string[] {
  return requests
    .filter((r) => r.method === 'PATCH' && new RegExp(`/${name}(/status)?$`).test(r.path))
    .map((r) => `${r.method} ${r.path.endsWith('/status') ? 'status' : 'object'}`);
}
