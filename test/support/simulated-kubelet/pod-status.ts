import { LOCALHOST } from './pod.js';
import type { InitStatus, PodRun } from './pod-run.js';

/** The merge patch for `pods/<name>/status` that describes a run as a kubelet would. */
export function podStatus(run: PodRun): Record<string, unknown> {
  const up = run.state === 'running' || run.state === 'restarting';
  const ready = up && run.ready;
  const condition = (
    type: string,
    status: boolean,
    since = run.startTime,
  ): Record<string, unknown> => ({
    type,
    status: status ? 'True' : 'False',
    lastProbeTime: null,
    lastTransitionTime: since,
  });
  const initialized = run.initStatuses.every((s) => s.terminated?.exitCode === 0);
  const phase =
    run.state === 'initializing'
      ? 'Pending'
      : up
        ? 'Running'
        : run.state === 'exited' && run.terminated?.exitCode === 0
          ? 'Succeeded'
          : 'Failed';
  return {
    metadata: { uid: run.uid }, // guards against writing to a recreated Pod of the same name
    status: {
      phase,
      reason: run.failure?.reason ?? null,
      message: run.failure?.message ?? null,
      hostIP: LOCALHOST,
      podIP: LOCALHOST,
      podIPs: [{ ip: LOCALHOST }],
      startTime: run.startTime,
      conditions: [
        condition('PodScheduled', true),
        condition('Initialized', initialized),
        condition('ContainersReady', ready, run.readySince),
        condition('Ready', ready, run.readySince),
      ],
      ...(run.initStatuses.length > 0
        ? { initContainerStatuses: run.initStatuses.map(initStatus) }
        : {}),
      containerStatuses: [mainStatus(run, ready, up)],
    },
  };
}

function initStatus(status: InitStatus): Record<string, unknown> {
  return {
    name: status.name,
    image: status.image,
    imageID: '',
    ready: status.terminated?.exitCode === 0,
    restartCount: 0,
    state: status.terminated
      ? { terminated: status.terminated }
      : { waiting: { reason: 'PodInitializing' } },
  };
}

function mainStatus(run: PodRun, ready: boolean, up: boolean): Record<string, unknown> {
  let state: Record<string, unknown>;
  if (up) state = { running: { startedAt: run.startedAt } };
  else if (run.terminated) state = { terminated: run.terminated };
  else
    state = {
      waiting: {
        reason: run.failure?.reason ?? 'PodInitializing',
        ...(run.failure ? { message: run.failure.message } : {}),
      },
    };
  return {
    name: run.main?.name ?? 'etcd',
    image: run.image,
    imageID: '',
    ready,
    restartCount: run.restartCount,
    started: up,
    state,
    ...(run.lastTerminated ? { lastState: { terminated: run.lastTerminated } } : {}),
  };
}
