import type { KubeObject } from '../../../src/framework/index.js';
import type { Resource } from '../../../src/framework/api/resource.js';

/** Pods, as the simulated kubelet watches them and writes their status. */
export const PODS: Resource = {
  group: '',
  version: 'v1',
  plural: 'pods',
  kind: 'Pod',
  namespaced: true,
  hasStatus: true,
};

/** Every Pod runs on this host: its Pod IP and host IP. */
export const LOCALHOST = '127.0.0.1';

/** An `env` entry as written in a Pod: unchecked until a container is planned. */
export interface EnvVar {
  name?: unknown;
  value?: unknown;
  valueFrom?: { fieldRef?: { fieldPath?: unknown } } & Record<string, unknown>;
}

/** A container as written in a Pod: unchecked until it is planned. */
export interface Container {
  name?: unknown;
  image?: unknown;
  command?: unknown;
  args?: unknown;
  env?: unknown;
  volumeMounts?: unknown;
  readinessProbe?: unknown;
}

/** The parts of a Pod the simulated kubelet reads. */
export interface Pod extends KubeObject {
  spec?: { initContainers?: unknown; containers?: unknown };
  status?: { phase?: string };
}

export function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
