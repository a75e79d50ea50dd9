import type { SecretMount } from './secret-volumes.js';
import type { ChildProcess } from 'node:child_process';
import type { Logger } from '../../../src/framework/index.js';
import type { ContainerPlan } from './container-plan.js';
import { podKey } from './pod.js';

export type RunState = 'initializing' | 'running' | 'restarting' | 'exited' | 'failed' | 'stopping';

/** How a container ended, as a `terminated` container state of the Kubernetes API. */
export interface Termination {
  exitCode: number;
  /** A number, as in the Kubernetes API. */
  signal?: number;
  reason: string;
  message?: string;
  startedAt?: string;
  finishedAt: string;
}

export interface InitStatus {
  name: string;
  image: string;
  terminated?: Termination;
}

/** One Pod the simulated kubelet took on: its folder, its processes and what its status says. */
export interface PodRun {
  key: string;
  namespace: string;
  name: string;
  uid: string;
  dir: string;
  cluster: string | undefined;
  member: string | undefined;
  logger: Logger;
  state: RunState;
  image: string;
  inits: ContainerPlan[];
  main: ContainerPlan | undefined;
  clientURL: string | undefined;
  /** The Secret volumes its containers mount, written into the Pod's folder before the first container starts. */
  secretMounts: SecretMount[];
  startTime: string;
  /** Set for failures before the main container ran (malformed Pod, init container, busy port). */
  failure: { reason: string; message: string } | undefined;
  initStatuses: InitStatus[];
  child: ChildProcess | undefined;
  initChild: ChildProcess | undefined;
  /** Resolves when the current main process has exited. */
  exited: Promise<void>;
  /** Set while the runner itself stops the process (upgrade, deletion), so the exit is no failure. */
  expectExit: boolean;
  restartCount: number;
  ready: boolean;
  readySince: string;
  startedAt: string | undefined;
  terminated: Termination | undefined;
  lastTerminated: Termination | undefined;
  /** Bumped on each spawn; a health loop of an older process ends. */
  generation: number;
  abort: AbortController;
  /** The start-up (init containers, spawn); teardown waits for it. */
  boot: Promise<void>;
  health: Promise<void>;
  statusWrites: Promise<void>;
  deleted: boolean;
}

/** Where a new run starts: its identity, its folder and its logger. */
export interface NewRun {
  namespace: string;
  name: string;
  uid: string;
  dir: string;
  labels: Record<string, string>;
  logger: Logger;
}

/** A Pod just taken on: initializing, nothing planned or started yet. */
export function newPodRun({ namespace, name, uid, dir, labels, logger }: NewRun): PodRun {
  const cluster = labels.etcd_cluster;
  return {
    key: podKey(namespace, name),
    namespace,
    name,
    uid,
    dir,
    cluster,
    member: cluster === undefined ? undefined : (labels.etcd_node ?? name),
    logger,
    state: 'initializing',
    image: '',
    inits: [],
    main: undefined,
    clientURL: undefined,
    secretMounts: [],
    startTime: new Date().toISOString(),
    failure: undefined,
    initStatuses: [],
    child: undefined,
    initChild: undefined,
    exited: Promise.resolve(),
    expectExit: false,
    restartCount: 0,
    ready: false,
    readySince: new Date().toISOString(),
    startedAt: undefined,
    terminated: undefined,
    lastTerminated: undefined,
    generation: 0,
    abort: new AbortController(),
    boot: Promise.resolve(),
    health: Promise.resolve(),
    statusWrites: Promise.resolve(),
    deleted: false,
  };
}
