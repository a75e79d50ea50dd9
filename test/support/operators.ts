import type { KubeConfig } from '@kubernetes/client-node';
import { createOperator, silentLogger, type HandlerClass, type Operator } from '../../src/framework/index.js';

/** A started in-process operator plus the requests it made, for write-budget assertions. */
export interface RunningOperator {
  operator: Operator;
  requests: Array<{ method: string; path: string; status: number }>;
  stop(): Promise<void>;
}

export async function startOperator(kc: KubeConfig, namespace: string, handlers: readonly HandlerClass[]): Promise<RunningOperator> {
  const requests: RunningOperator['requests'] = [];
  const operator = createOperator({
    kubeConfig: kc,
    handlers,
    namespaces: [namespace],
    logger: silentLogger(),
    onRequest: (method, path, status) => requests.push({ method, path, status }),
  }).start();
  await operator.ready;
  return { operator, requests, stop: () => operator.stop(2_000) };
}

/** PATCH and POST requests made to one object (events excluded). */
export function writesTo(requests: RunningOperator['requests'], name: string): string[] {
  return requests
    .filter((r) => r.method === 'PATCH' && new RegExp(`/${name}(/status)?$`).test(r.path))
    .map((r) => `${r.method} ${r.path.endsWith('/status') ? 'status' : 'object'}`);
}
