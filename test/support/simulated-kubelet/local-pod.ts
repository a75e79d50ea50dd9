import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, type ResourceClient } from '../../../src/framework/index.js';
import { killGroup, stopGroup } from '../../../src/testing/managed-process.js';
import { exitCodeOf, exitOf, signalNumber, tailOf, type ExitOutcome } from './container-exit.js';
import {
  DEFAULT_FAILURE_THRESHOLD,
  firstURL,
  flagValue,
  planContainer,
  podContainers,
  type ContainerPlan,
} from './container-plan.js';
import type { ContainerExecutables } from './executables.js';
import type { LoopbackAddresses } from './loopback-addresses.js';
import { probeHealth } from './member-health.js';
import { messageOf, type Container, type Pod } from './pod.js';
import type { PodRun, Termination } from './pod-run.js';
import { podStatus } from './pod-status.js';
import { portInUse } from './port-in-use.js';
import { secretMounts, writeSecretVolumes, type Secret } from './secret-volumes.js';
import type { ProcessGroups } from './process-groups.js';
import { type MergePatch } from '../../../src/framework/intents/patch.js';

const INIT_TIMEOUT_MS = 60_000;
const DELETE_GRACE_MS = 3_000;
const UPGRADE_GRACE_MS = 10_000;
const POLL_UNTIL_READY_MS = 200;
const POLL_WHILE_READY_MS = 1_000;
const STATUS_ATTEMPTS = 5;

/** What a {@link LocalPod} shares with the other Pods of its runner. */
export interface PodHost {
  podsApi: ResourceClient<Pod>;
  /** Where `secret` volumes are read from. */
  secretsApi: ResourceClient<Secret>;
  /** Told which members run and are ready. */
  addresses: LoopbackAddresses;
  processes: ProcessGroups;
  executables: ContainerExecutables;
  /** True once the runner stops: status writes end. */
  stopped(): boolean;
}

/**
 * One Pod run as local processes, as a kubelet runs it: init containers in order, then the first
 * container, whose `/health` decides `Ready`; an image change restarts it in place, an unexpected
 * exit fails the Pod for good (`restartPolicy: Never`). Every change is written to `pods/status`.
 */
export class LocalPod {
  constructor(
    readonly run: PodRun,
    private readonly host: PodHost,
  ) {}

  /** Reads the Pod, then boots it in the background (init containers can take a while). */
  start(pod: Pod): void {
    const run = this.run;
    try {
      this.plan(pod);
    } catch (error) {
      this.fail('Unrunnable', `pod ${run.namespace}/${run.name}: ${messageOf(error)}`);
      return;
    }
    run.boot = this.bootstrap().catch((error: unknown) =>
      this.fail('StartError', `pod ${run.namespace}/${run.name}: ${messageOf(error)}`),
    );
  }

  /** A change to the Pod: only an image change matters (the operator's in-place upgrade). */
  async update(pod: Pod): Promise<void> {
    const run = this.run;
    const containers = pod.spec?.containers;
    const first = Array.isArray(containers) ? (containers[0] as Container | undefined) : undefined;
    const image = typeof first?.image === 'string' ? first.image : undefined;
    if (image === undefined || image === run.image) return;
    if (run.state === 'initializing') {
      run.image = image; // not started yet: it will start as the new image
      if (run.main) run.main.image = image;
      return;
    }
    if (run.state !== 'running' || !run.child?.pid) return; // a finished Pod is not restarted
    run.logger.info(
      { from: run.image, to: image },
      `pod ${run.namespace}/${run.name}: image changed; restarting in place`,
    );
    run.state = 'restarting';
    run.ready = false;
    run.readySince = new Date().toISOString();
    if (run.cluster && run.member)
      this.host.addresses.setReady(run.namespace, run.cluster, run.member, false);
    void this.publish();
    run.expectExit = true;
    await this.stopProcess(UPGRADE_GRACE_MS);
    run.expectExit = false;
    if (run.abort.signal.aborted) return;
    run.lastTerminated = run.terminated;
    run.image = image;
    if (run.main) run.main.image = image;
    run.restartCount += 1;
    this.spawnMain();
  }

  /** The Pod is gone (or going): stop everything it runs, then remove its folder. */
  async teardown(): Promise<void> {
    const run = this.run;
    if (run.deleted) return;
    run.deleted = true;
    run.state = 'stopping';
    run.abort.abort();
    run.expectExit = true;
    if (run.initChild?.pid !== undefined) killGroup(run.initChild.pid, 'SIGKILL');
    await this.stopProcess(DELETE_GRACE_MS);
    await Promise.allSettled([run.boot, run.health, run.statusWrites]);
    // The boot may have spawned between our kill and its abort check; make sure nothing survives.
    await this.stopProcess(DELETE_GRACE_MS);
    if (run.cluster && run.member)
      this.host.addresses.setRunning(run.namespace, run.cluster, run.member, false);
    rmSync(run.dir, { recursive: true, force: true });
    run.logger.info(`pod ${run.namespace}/${run.name}: stopped and removed`);
  }

  /** Reads the Pod's containers into plans; throws for what cannot run here. */
  private plan(pod: Pod): void {
    const run = this.run;
    const { inits, main } = podContainers(pod);
    run.secretMounts = secretMounts(pod, run.dir);
    const context = { pod, dir: run.dir, mounts: run.secretMounts };
    run.inits = inits.map((container, i) =>
      planContainer(container, `spec.initContainers[${i}]`, context, this.host.executables),
    );
    run.initStatuses = run.inits.map((plan) => ({ name: plan.name, image: plan.image }));
    run.main = planContainer(main, 'spec.containers[0]', context, this.host.executables);
    run.image = run.main.image;
    run.clientURL = firstURL(flagValue(run.main, 'advertise-client-urls'));
  }

  /** Init containers in order, then the main container; a failure on the way marks the Pod Failed. */
  private async bootstrap(): Promise<void> {
    const run = this.run;
    rmSync(run.dir, { recursive: true, force: true }); // an emptyDir starts empty
    mkdirSync(run.dir, { recursive: true });
    if (
      !(await writeSecretVolumes(
        this.host.secretsApi,
        run.namespace,
        run.secretMounts,
        run.abort.signal,
      ))
    )
      return;
    for (const [index, plan] of run.inits.entries()) {
      const result = await this.runInit(plan);
      if (run.abort.signal.aborted) return;
      const status = run.initStatuses[index];
      if (status) status.terminated = result;
      if (result.exitCode !== 0) {
        this.fail(
          'InitContainerFailed',
          `pod ${run.namespace}/${run.name}: init container ${plan.name} ${result.message ?? `exited with code ${result.exitCode}`}`,
        );
        return;
      }
    }
    const main = run.main as ContainerPlan;
    for (const flag of ['listen-peer-urls', 'listen-client-urls']) {
      for (const url of (flagValue(main, flag) ?? '').split(',').filter(Boolean)) {
        if (await portInUse(url)) {
          this.fail(
            'PortInUse',
            `pod ${run.namespace}/${run.name}: ${url} (--${flag}) is already in use; not starting etcd`,
          );
          return;
        }
      }
    }
    if (run.abort.signal.aborted) return;
    this.spawnMain();
  }

  /** Runs one init container to its end (at most 60 s) with its stdout and stderr in files of the Pod's folder. */
  private async runInit(plan: ContainerPlan): Promise<Termination> {
    const run = this.run;
    const startedAt = new Date().toISOString();
    const errFile = join(run.dir, `init-${plan.name}.stderr.log`);
    const outFd = openSync(join(run.dir, `init-${plan.name}.log`), 'a');
    const errFd = openSync(errFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(plan.file, plan.args, {
        cwd: run.dir,
        env: plan.env,
        detached: true,
        stdio: ['ignore', outFd, errFd],
      });
    } finally {
      closeSync(outFd);
      closeSync(errFd);
    }
    run.initChild = child;
    this.host.processes.add(child);
    child.unref();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
    }, INIT_TIMEOUT_MS);
    const outcome = await exitOf(child);
    clearTimeout(timer);
    run.initChild = undefined;
    const finishedAt = new Date().toISOString();
    if ('error' in outcome) {
      return {
        exitCode: 128,
        reason: 'StartError',
        message: `could not start ${plan.file}: ${outcome.error.message}`,
        startedAt,
        finishedAt,
      };
    }
    const exitCode = exitCodeOf(outcome.code, outcome.signal);
    if (exitCode === 0) return { exitCode, reason: 'Completed', startedAt, finishedAt };
    const tail = tailOf(errFile) || tailOf(join(run.dir, `init-${plan.name}.log`));
    const what = timedOut
      ? `did not finish within ${INIT_TIMEOUT_MS / 1000} s`
      : `exited with code ${exitCode}`;
    return {
      exitCode,
      signal: signalNumber(outcome.signal),
      reason: timedOut ? 'DeadlineExceeded' : 'Error',
      message: tail ? `${what}: ${tail}` : what,
      startedAt,
      finishedAt,
    };
  }

  /** Starts (or restarts) the main container in a process group of its own, logging to `container.log`. */
  private spawnMain(): void {
    const run = this.run;
    const plan = run.main as ContainerPlan;
    const fd = openSync(join(run.dir, 'container.log'), 'a');
    let child: ChildProcess;
    try {
      child = spawn(plan.file, plan.args, {
        cwd: run.dir,
        env: plan.env,
        detached: true,
        stdio: ['ignore', fd, fd],
      });
    } finally {
      closeSync(fd);
    }
    this.host.processes.add(child);
    child.unref();
    run.child = child;
    run.state = 'running';
    run.ready = false;
    run.readySince = new Date().toISOString();
    run.startedAt = run.readySince;
    run.terminated = undefined;
    run.generation += 1;
    run.exited = exitOf(child).then((outcome) => this.exited(child, outcome));
    if (run.cluster && run.member)
      this.host.addresses.setRunning(run.namespace, run.cluster, run.member, true);
    run.logger.info(
      { pid: child.pid, file: plan.file, restartCount: run.restartCount },
      `pod ${run.namespace}/${run.name}: started ${plan.name}`,
    );
    void this.publish();
    run.health = this.watchHealth(run.generation);
  }

  /** The main process ended: expected (upgrade, deletion) or a crash, which fails the Pod for good. */
  private exited(child: ChildProcess, outcome: ExitOutcome): void {
    const run = this.run;
    if (run.child !== child) return;
    run.child = undefined;
    run.ready = false;
    if (run.cluster && run.member)
      this.host.addresses.setRunning(run.namespace, run.cluster, run.member, false);
    const finishedAt = new Date().toISOString();
    const termination: Termination =
      'error' in outcome
        ? {
            exitCode: 128,
            reason: 'StartError',
            message: `could not start ${run.main?.file}: ${outcome.error.message}`,
            startedAt: run.startedAt,
            finishedAt,
          }
        : {
            exitCode: exitCodeOf(outcome.code, outcome.signal),
            signal: signalNumber(outcome.signal),
            reason: exitCodeOf(outcome.code, outcome.signal) === 0 ? 'Completed' : 'Error',
            startedAt: run.startedAt,
            finishedAt,
          };
    run.terminated = termination;
    if (run.expectExit) return;
    run.state = 'exited';
    run.readySince = finishedAt;
    run.logger.info(
      { exitCode: termination.exitCode, signal: termination.signal },
      `pod ${run.namespace}/${run.name}: ${run.main?.name} exited`,
    );
    void this.publish();
  }

  /** Polls the member's `/health`: every 200 ms until ready, then every second, flipping `Ready` on changes. */
  private async watchHealth(generation: number): Promise<void> {
    const run = this.run;
    const current = (): boolean =>
      !run.abort.signal.aborted && run.generation === generation && run.state === 'running';
    let everReady = false;
    let failures = 0;
    while (current()) {
      // Without an advertised client URL there is nothing to probe; a started process counts as ready.
      const probed = run.clientURL ? await probeHealth(run.clientURL, run.main?.probeTLS) : true;
      if (!current()) return;
      failures = probed ? 0 : failures + 1;
      const healthy =
        probed ||
        (run.ready &&
          failures < (run.main?.readinessFailureThreshold ?? DEFAULT_FAILURE_THRESHOLD));
      everReady ||= healthy;
      if (healthy !== run.ready) {
        run.ready = healthy;
        run.readySince = new Date().toISOString();
        if (run.cluster && run.member)
          this.host.addresses.setReady(run.namespace, run.cluster, run.member, healthy);
        run.logger.debug({ ready: healthy }, `pod ${run.namespace}/${run.name}: readiness changed`);
        void this.publish();
      }
      await sleep(everReady ? POLL_WHILE_READY_MS : POLL_UNTIL_READY_MS, undefined, {
        signal: run.abort.signal,
      }).catch(() => undefined);
    }
  }

  /** SIGTERM to the main process group, SIGKILL after `graceMs`; resolves once it has exited. */
  private async stopProcess(graceMs: number): Promise<void> {
    const pid = this.run.child?.pid;
    if (pid === undefined) return;
    await stopGroup(pid, this.run.exited, 'SIGTERM', graceMs);
  }

  private fail(reason: string, message: string): void {
    const run = this.run;
    if (run.deleted) return;
    run.state = 'failed';
    run.ready = false;
    run.failure = { reason, message };
    run.readySince = new Date().toISOString();
    run.logger.warn({ reason }, message);
    void this.publish();
  }

  /** Queues a status write of the Pod's current state; writes go out in order, each with the state at send time. */
  private publish(): Promise<void> {
    const run = this.run;
    run.statusWrites = run.statusWrites.then(() => this.writeStatus());
    return run.statusWrites;
  }

  /** Sends the current status; retries briefly when the API server is unreachable or busy, as a kubelet would keep trying. */
  private async writeStatus(): Promise<void> {
    const run = this.run;
    const ref = { namespace: run.namespace, name: run.name };
    for (let attempt = 1; !run.deleted && !this.host.stopped(); attempt++) {
      try {
        await this.host.podsApi.patch(ref, podStatus(run) as MergePatch<Pod>, {
          subresource: 'status',
        });
        return;
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return; // deleted meanwhile
        const transient =
          error instanceof ApiError &&
          (error.status === 0 || error.status === 429 || error.status >= 500);
        if (!transient || attempt >= STATUS_ATTEMPTS) {
          run.logger.warn(
            { err: messageOf(error) },
            `pod ${run.namespace}/${run.name}: status update failed`,
          );
          return;
        }
        await sleep(250 * attempt);
      }
    }
  }
}
