import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants as fsConstants, existsSync, mkdtempSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { constants as osConstants, tmpdir } from 'node:os';
import { basename, delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Subscription } from 'rxjs';
import { ApiClient, ApiError, silentLogger, type KubeObject, type Logger, type MergePatch, type ResourceClient } from 'konductor';
import { watchResource, type Resource, type WatchEvent } from 'konductor/runtime';
import { cacheRoot, killGroup, registerPid, startReaper } from 'konductor/testing';
import type { LoopbackAddresses } from './loopback-addresses.js';

/** Options for {@link EtcdPodRunner}. */
export interface EtcdPodRunnerOptions {
  kubeConfig: KubeConfig;
  /** Told which members run and are ready, so client-Service endpoints resolve to live members. */
  addresses: LoopbackAddresses;
  /**
   * Run only the Pods of this namespace; all namespaces when omitted. Give one whenever several
   * runners share a control plane (parallel test files), or they would all run every Pod.
   */
  namespace?: string;
  logger?: Logger;
  /**
   * Folder for the per-Pod folders (each stands in for the Pod's `/var/etcd` volume). Default: a fresh
   * folder under `/dev/shm` when writable (etcd's fsyncs cost nothing on tmpfs), else the OS temp
   * folder; only that default folder is removed by {@link EtcdPodRunner.stop}.
   */
  workDir?: string;
}

/** A process the runner has running, for tests. */
export interface RunningEtcdProcess {
  namespace: string;
  pod: string;
  pid: number;
  /** The Pod's folder: where its `/var/etcd` volume lives (etcd's `--data-dir` is usually below it). */
  dataDir: string;
}

/** The volume mount path of the etcd Pods, replaced by the Pod's folder in every argument. */
const VOLUME_PATH = '/var/etcd';
/** The volume path where it starts a path: at the start, after `=`, a blank, a quote, a comma... */
const VOLUME_PATTERN = new RegExp(`(^|[=\\s'":,;(])${VOLUME_PATH.replace(/\//g, '\\/')}(?=$|[/\\s'":,;)])`, 'g');
const INIT_TIMEOUT_MS = 60_000;
const DELETE_GRACE_MS = 3_000;
const UPGRADE_GRACE_MS = 10_000;
const START_TIMEOUT_MS = 30_000;
const POLL_UNTIL_READY_MS = 200;
const POLL_WHILE_READY_MS = 1_000;
const PROBE_TIMEOUT_MS = 1_000;
/** Kubernetes' default `failureThreshold` of a probe, for a container whose readinessProbe gives none. */
const DEFAULT_FAILURE_THRESHOLD = 3;
const STATUS_ATTEMPTS = 5;
const LOCALHOST = '127.0.0.1';

const PODS: Resource = { group: '', version: 'v1', plural: 'pods', kind: 'Pod', namespaced: true, hasStatus: true };

interface EnvVar {
  name?: unknown;
  value?: unknown;
  valueFrom?: { fieldRef?: { fieldPath?: unknown } } & Record<string, unknown>;
}

interface Container {
  name?: unknown;
  image?: unknown;
  command?: unknown;
  args?: unknown;
  env?: unknown;
  readinessProbe?: unknown;
}

interface Pod extends KubeObject {
  spec?: { initContainers?: unknown; containers?: unknown };
  status?: { phase?: string };
}

/** A container, ready to spawn: the local executable, rewritten arguments and the environment. */
interface ContainerPlan {
  name: string;
  image: string;
  file: string;
  args: string[];
  env: Record<string, string>;
  /**
   * Failed probes in a row before a ready container is reported not ready: its readinessProbe's
   * `failureThreshold`, as a kubelet reads it. A single failure of `/health` is what an election looks
   * like (a leader restarting during an upgrade), not a member that stopped serving.
   */
  readinessFailureThreshold: number;
}

type RunState = 'initializing' | 'running' | 'restarting' | 'exited' | 'failed' | 'stopping';

interface Termination {
  exitCode: number;
  /** A number, as in the Kubernetes API. */
  signal?: number;
  reason: string;
  message?: string;
  startedAt?: string;
  finishedAt: string;
}

/** One Pod the runner took on: its folder, its processes and what its status says. */
interface PodRun {
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
  startTime: string;
  /** Set for failures before the main container ran (malformed Pod, init container, busy port). */
  failure: { reason: string; message: string } | undefined;
  initStatuses: { name: string; image: string; terminated?: Termination }[];
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

/** Thrown while reading a Pod the runner cannot run; becomes the Pod's Failed message. */
class UnrunnablePod extends Error {}

/**
 * A stand-in kubelet for etcd Pods in tests: it watches Pods labelled `app=etcd`, runs each one's
 * init containers and first container as local processes (the `/var/etcd` volume becomes a folder
 * of its own, `etcd` the local etcd binary), and reports them through `pods/status` as a kubelet
 * would: `Running`, `Ready` while the member's `/health` answers 200, `Failed` when the process
 * dies (`restartPolicy: Never`: never restarted). Deleting a Pod stops its process and removes its
 * folder; changing its image restarts the process in place, as a kubelet does on an upgrade.
 *
 * Pods should advertise URLs from {@link LoopbackAddresses}, since Pod DNS names do not resolve here.
 * Processes run in process groups of their own and are killed by {@link stop}, when this process
 * exits, and (for the default work folder) by a detached reaper if this process is killed.
 *
 * @example
 * ```ts
 * const addresses = new LoopbackAddresses();
 * const runner = new EtcdPodRunner({ kubeConfig, addresses, namespace });
 * await runner.start();
 * // ... run the etcd operator with `addresses`, create an EtcdCluster, assert ...
 * await runner.stop();
 * ```
 */
export class EtcdPodRunner {
  private readonly client: ApiClient;
  private readonly podsApi: ResourceClient<Pod>;
  private readonly logger: Logger;
  private readonly addresses: LoopbackAddresses;
  private readonly namespace: string | undefined;
  private readonly workDir: string;
  private readonly ownsWorkDir: boolean;
  private readonly pods = new Map<string, PodRun>();
  private readonly queues = new Map<string, Promise<void>>();
  /** Every process group we started that has not exited yet, for the synchronous exit hook. */
  private readonly children = new Set<ChildProcess>();
  private readonly onExit = (): void => this.killAllNow();
  private subscription: Subscription | undefined;
  private etcdPath: string | undefined;
  private started = false;
  private stopped = false;

  /** Creates the work folder; nothing runs before {@link start}. */
  constructor(options: EtcdPodRunnerOptions) {
    this.client = new ApiClient(options.kubeConfig);
    this.podsApi = this.client.resource<Pod>('v1', 'pods');
    this.addresses = options.addresses;
    this.namespace = options.namespace;
    this.logger = (options.logger ?? silentLogger()).child({ component: 'etcd-pod-runner' });
    this.ownsWorkDir = options.workDir === undefined;
    this.workDir = options.workDir ?? mkdtempSync(join(defaultBaseDir(), 'konductor-etcd-pods-'));
    mkdirSync(this.workDir, { recursive: true });
  }

  /** Starts watching Pods; resolves once the initial listing has been handled (its Pods are starting). */
  async start(): Promise<void> {
    if (this.started) throw new Error('EtcdPodRunner: already started');
    this.started = true;
    if (this.ownsWorkDir) startReaper(this.workDir);
    process.once('exit', this.onExit);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`EtcdPodRunner: the initial Pod listing in ${this.namespace ?? 'all namespaces'} did not complete within ${START_TIMEOUT_MS} ms`)),
        START_TIMEOUT_MS,
      );
      this.subscription = watchResource<Pod>(this.client, PODS, {
        namespace: this.namespace,
        labelSelector: 'app=etcd',
        logger: this.logger,
      }).subscribe({
        next: (event) => {
          if (event.type === 'SYNCED') {
            clearTimeout(timer);
            // Resolve after the listing's Pods were dispatched: their queues run before this callback's successors.
            void Promise.all([...this.queues.values()]).then(() => resolve());
          } else {
            this.dispatch(event);
          }
        },
        error: (error: unknown) => {
          clearTimeout(timer);
          this.logger.error({ err: error }, 'pod watch failed');
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      });
    });
  }

  /** Stops watching, stops every process (SIGTERM, then SIGKILL after 3 s) and removes the Pod folders. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.subscription?.unsubscribe();
    await Promise.allSettled([...this.queues.values()]);
    await Promise.allSettled([...this.pods.values()].map((run) => this.teardown(run)));
    process.off('exit', this.onExit);
    if (this.ownsWorkDir) rmSync(this.workDir, { recursive: true, force: true });
    this.client.close();
  }

  /**
   * Sends `signal` to the process group of a Pod's main container, to simulate a crash; the Pod then
   * goes Failed like any unexpected exit. Returns false when the Pod has no running process.
   */
  kill(namespace: string, podName: string, signal: NodeJS.Signals = 'SIGKILL'): boolean {
    const pid = this.pods.get(podKey(namespace, podName))?.child?.pid;
    if (pid === undefined) return false;
    killGroup(pid, signal);
    return true;
  }

  /** The main processes running now. */
  processes(): RunningEtcdProcess[] {
    const running: RunningEtcdProcess[] = [];
    for (const run of this.pods.values()) {
      const pid = run.child?.pid;
      if (pid !== undefined) running.push({ namespace: run.namespace, pod: run.name, pid, dataDir: run.dir });
    }
    return running;
  }

  /** Queues an event behind earlier ones of the same Pod, so a Pod's changes apply in order. */
  private dispatch(event: Exclude<WatchEvent<Pod>, { type: 'SYNCED' }>): void {
    const { namespace, name } = event.object.metadata ?? {};
    if (!namespace || !name || this.stopped) return;
    const key = podKey(namespace, name);
    const previous = this.queues.get(key) ?? Promise.resolve();
    const next = previous
      .then(() => (this.stopped ? undefined : this.handle(event.type, event.object, namespace, name)))
      .catch((error: unknown) => this.logger.error({ err: error, namespace, pod: name }, `pod ${namespace}/${name}: handling a ${event.type} event failed`));
    this.queues.set(key, next);
    void next.then(() => {
      if (this.queues.get(key) === next) this.queues.delete(key);
    });
  }

  private async handle(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Pod, namespace: string, name: string): Promise<void> {
    const key = podKey(namespace, name);
    let run = this.pods.get(key);
    const uid = pod.metadata?.uid ?? '';
    if (type === 'DELETED') {
      if (run?.uid === uid) await this.teardown(run);
      return;
    }
    if (run && run.uid !== uid) {
      // Deleted and recreated under the same name while we were not looking: the old one is gone.
      await this.teardown(run);
      run = undefined;
    }
    if (pod.metadata?.deletionTimestamp) {
      if (run) await this.teardown(run);
      await this.forceDelete(namespace, name, uid);
      return;
    }
    if (run) {
      await this.update(run, pod);
      return;
    }
    const phase = pod.status?.phase;
    if (phase === 'Running' || phase === 'Succeeded' || phase === 'Failed') return; // another runner's, or a finished one
    this.launch(pod, namespace, name, uid);
  }

  /** Takes a new Pod on: reads it, then boots it in the background (init containers can take a while). */
  private launch(pod: Pod, namespace: string, name: string, uid: string): void {
    const labels = pod.metadata?.labels ?? {};
    const cluster = labels.etcd_cluster;
    const run: PodRun = {
      key: podKey(namespace, name),
      namespace,
      name,
      uid,
      dir: join(this.workDir, `${namespace}_${name}`),
      cluster,
      member: cluster === undefined ? undefined : (labels.etcd_node ?? name),
      logger: this.logger.child({ namespace, pod: name }),
      state: 'initializing',
      image: '',
      inits: [],
      main: undefined,
      clientURL: undefined,
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
    this.pods.set(run.key, run);
    try {
      this.plan(run, pod);
    } catch (error) {
      this.fail(run, 'Unrunnable', `pod ${namespace}/${name}: ${messageOf(error)}`);
      return;
    }
    run.boot = this.bootstrap(run).catch((error: unknown) => this.fail(run, 'StartError', `pod ${namespace}/${name}: ${messageOf(error)}`));
  }

  /** Reads the Pod's containers into plans; throws {@link UnrunnablePod} for what cannot run here. */
  private plan(run: PodRun, pod: Pod): void {
    const containers = pod.spec?.containers;
    if (!Array.isArray(containers) || containers.length === 0) throw new UnrunnablePod('spec.containers is empty');
    const inits = pod.spec?.initContainers ?? [];
    if (!Array.isArray(inits)) throw new UnrunnablePod('spec.initContainers is not a list');
    const context = { pod, dir: run.dir };
    run.inits = inits.map((container: unknown, i: number) => this.planContainer(container, `spec.initContainers[${i}]`, context));
    run.initStatuses = run.inits.map((plan) => ({ name: plan.name, image: plan.image }));
    run.main = this.planContainer(containers[0], 'spec.containers[0]', context);
    run.image = run.main.image;
    run.clientURL = firstURL(flagValue(run.main, 'advertise-client-urls'));
  }

  private planContainer(value: unknown, where: string, context: { pod: Pod; dir: string }): ContainerPlan {
    if (typeof value !== 'object' || value === null) throw new UnrunnablePod(`${where} is not an object`);
    const container = value as Container;
    const name = typeof container.name === 'string' ? container.name : '';
    const image = typeof container.image === 'string' ? container.image : '';
    if (!name) throw new UnrunnablePod(`${where} has no name`);
    const command = stringList(container.command, `${where}.command`);
    const args = stringList(container.args, `${where}.args`);
    // Without a command a kubelet runs the image's entrypoint, which a local runner cannot know.
    if (command.length === 0) throw new UnrunnablePod(`${where} (${name}) has no command; image entrypoints are unknown to the pod runner`);
    const env = containerEnv(container.env, `${where}.env`, context);
    const words = [...command, ...args].map((word) => rewriteVolume(expand(word, env), context.dir));
    const program = words[0] as string;
    const file = this.executable(program);
    if (!file) throw new UnrunnablePod(`${where} (${name}): executable ${basename(program)} not found on PATH`);
    return { name, image, file, args: words.slice(1), env, readinessFailureThreshold: failureThreshold(container.readinessProbe) };
  }

  /** `etcd` and `etcdctl` are the test binaries; anything else (`sh`, `curl`) comes from PATH. */
  private executable(program: string): string | undefined {
    const name = basename(program);
    if (name === 'etcd') return this.etcd();
    if (name === 'etcdctl') {
      const etcd = this.etcd();
      const sibling = etcd ? join(dirname(etcd), 'etcdctl') : undefined;
      return sibling && isExecutable(sibling) ? sibling : onPath('etcdctl');
    }
    return onPath(name);
  }

  private etcd(): string | undefined {
    this.etcdPath ??= etcdBinary();
    return this.etcdPath;
  }

  /** Init containers in order, then the main container; a failure on the way marks the Pod Failed. */
  private async bootstrap(run: PodRun): Promise<void> {
    rmSync(run.dir, { recursive: true, force: true }); // an emptyDir starts empty
    mkdirSync(run.dir, { recursive: true });
    for (const [index, plan] of run.inits.entries()) {
      const result = await this.runInit(run, plan);
      if (run.abort.signal.aborted) return;
      const status = run.initStatuses[index];
      if (status) status.terminated = result;
      if (result.exitCode !== 0) {
        this.fail(run, 'InitContainerFailed', `pod ${run.namespace}/${run.name}: init container ${plan.name} ${result.message ?? `exited with code ${result.exitCode}`}`);
        return;
      }
    }
    const main = run.main as ContainerPlan;
    for (const flag of ['listen-peer-urls', 'listen-client-urls']) {
      for (const url of (flagValue(main, flag) ?? '').split(',').filter(Boolean)) {
        if (await portInUse(url)) {
          this.fail(run, 'PortInUse', `pod ${run.namespace}/${run.name}: ${url} (--${flag}) is already in use; not starting etcd`);
          return;
        }
      }
    }
    if (run.abort.signal.aborted) return;
    this.spawnMain(run);
  }

  /** Runs one init container to its end (at most 60 s) with its stdout and stderr in files of the Pod's folder. */
  private async runInit(run: PodRun, plan: ContainerPlan): Promise<Termination> {
    const startedAt = new Date().toISOString();
    const errFile = join(run.dir, `init-${plan.name}.stderr.log`);
    const outFd = openSync(join(run.dir, `init-${plan.name}.log`), 'a');
    const errFd = openSync(errFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(plan.file, plan.args, { cwd: run.dir, env: plan.env, detached: true, stdio: ['ignore', outFd, errFd] });
    } finally {
      closeSync(outFd);
      closeSync(errFd);
    }
    run.initChild = child;
    this.register(child);
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
      return { exitCode: 128, reason: 'StartError', message: `could not start ${plan.file}: ${outcome.error.message}`, startedAt, finishedAt };
    }
    const exitCode = exitCodeOf(outcome.code, outcome.signal);
    if (exitCode === 0) return { exitCode, reason: 'Completed', startedAt, finishedAt };
    const tail = tailOf(errFile) || tailOf(join(run.dir, `init-${plan.name}.log`));
    const what = timedOut ? `did not finish within ${INIT_TIMEOUT_MS / 1000} s` : `exited with code ${exitCode}`;
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
  private spawnMain(run: PodRun): void {
    const plan = run.main as ContainerPlan;
    const fd = openSync(join(run.dir, 'container.log'), 'a');
    let child: ChildProcess;
    try {
      child = spawn(plan.file, plan.args, { cwd: run.dir, env: plan.env, detached: true, stdio: ['ignore', fd, fd] });
    } finally {
      closeSync(fd);
    }
    this.register(child);
    child.unref();
    run.child = child;
    run.state = 'running';
    run.ready = false;
    run.readySince = new Date().toISOString();
    run.startedAt = run.readySince;
    run.terminated = undefined;
    run.generation += 1;
    run.exited = exitOf(child).then((outcome) => this.exited(run, child, outcome));
    if (run.cluster && run.member) this.addresses.setRunning(run.namespace, run.cluster, run.member, true);
    run.logger.info({ pid: child.pid, file: plan.file, restartCount: run.restartCount }, `pod ${run.namespace}/${run.name}: started ${plan.name}`);
    void this.publish(run);
    run.health = this.watchHealth(run, run.generation);
  }

  /** The main process ended: expected (upgrade, deletion) or a crash, which fails the Pod for good. */
  private exited(run: PodRun, child: ChildProcess, outcome: ExitOutcome): void {
    if (run.child !== child) return;
    run.child = undefined;
    run.ready = false;
    if (run.cluster && run.member) this.addresses.setRunning(run.namespace, run.cluster, run.member, false);
    const finishedAt = new Date().toISOString();
    const termination: Termination =
      'error' in outcome
        ? { exitCode: 128, reason: 'StartError', message: `could not start ${run.main?.file}: ${outcome.error.message}`, startedAt: run.startedAt, finishedAt }
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
    run.logger.info({ exitCode: termination.exitCode, signal: termination.signal }, `pod ${run.namespace}/${run.name}: ${run.main?.name} exited`);
    void this.publish(run);
  }

  /** A change to a Pod we run: only an image change matters (the operator's in-place upgrade). */
  private async update(run: PodRun, pod: Pod): Promise<void> {
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
    run.logger.info({ from: run.image, to: image }, `pod ${run.namespace}/${run.name}: image changed; restarting in place`);
    run.state = 'restarting';
    run.ready = false;
    run.readySince = new Date().toISOString();
    if (run.cluster && run.member) this.addresses.setReady(run.namespace, run.cluster, run.member, false);
    void this.publish(run);
    run.expectExit = true;
    await this.stopProcess(run, UPGRADE_GRACE_MS);
    run.expectExit = false;
    if (run.abort.signal.aborted) return;
    run.lastTerminated = run.terminated;
    run.image = image;
    if (run.main) run.main.image = image;
    run.restartCount += 1;
    this.spawnMain(run);
  }

  /** Polls the member's `/health`: every 200 ms until ready, then every second, flipping `Ready` on changes. */
  private async watchHealth(run: PodRun, generation: number): Promise<void> {
    const current = (): boolean => !run.abort.signal.aborted && run.generation === generation && run.state === 'running';
    let everReady = false;
    let failures = 0;
    while (current()) {
      // Without an advertised client URL there is nothing to probe; a started process counts as ready.
      const probed = run.clientURL ? await probeHealth(run.clientURL) : true;
      if (!current()) return;
      failures = probed ? 0 : failures + 1;
      const healthy = probed || (run.ready && failures < (run.main?.readinessFailureThreshold ?? DEFAULT_FAILURE_THRESHOLD));
      everReady ||= healthy;
      if (healthy !== run.ready) {
        run.ready = healthy;
        run.readySince = new Date().toISOString();
        if (run.cluster && run.member) this.addresses.setReady(run.namespace, run.cluster, run.member, healthy);
        run.logger.debug({ ready: healthy }, `pod ${run.namespace}/${run.name}: readiness changed`);
        void this.publish(run);
      }
      await sleep(everReady ? POLL_WHILE_READY_MS : POLL_UNTIL_READY_MS, undefined, { signal: run.abort.signal }).catch(() => undefined);
    }
  }

  /** The Pod is gone (or going): stop everything it runs, then remove its folder. */
  private async teardown(run: PodRun): Promise<void> {
    if (this.pods.get(run.key) === run) this.pods.delete(run.key);
    if (run.deleted) return;
    run.deleted = true;
    run.state = 'stopping';
    run.abort.abort();
    run.expectExit = true;
    if (run.initChild?.pid !== undefined) killGroup(run.initChild.pid, 'SIGKILL');
    await this.stopProcess(run, DELETE_GRACE_MS);
    await Promise.allSettled([run.boot, run.health, run.statusWrites]);
    // The boot may have spawned between our kill and its abort check; make sure nothing survives.
    await this.stopProcess(run, DELETE_GRACE_MS);
    if (run.cluster && run.member) this.addresses.setRunning(run.namespace, run.cluster, run.member, false);
    rmSync(run.dir, { recursive: true, force: true });
    run.logger.info(`pod ${run.namespace}/${run.name}: stopped and removed`);
  }

  /** SIGTERM to the main process group, SIGKILL after `graceMs`; resolves once it has exited. */
  private async stopProcess(run: PodRun, graceMs: number): Promise<void> {
    const pid = run.child?.pid;
    if (pid === undefined) return;
    const exited = run.exited;
    killGroup(pid, 'SIGTERM');
    const grace = new AbortController();
    const done = await Promise.race([exited.then(() => true), sleep(graceMs, false, { signal: grace.signal }).catch(() => false)]);
    grace.abort();
    if (!done) {
      killGroup(pid, 'SIGKILL');
      await exited;
    }
  }

  /** Without a kubelet nobody confirms a graceful deletion; finish it. */
  private async forceDelete(namespace: string, name: string, uid: string): Promise<void> {
    try {
      await this.podsApi.delete({ namespace, name }, { gracePeriodSeconds: 0, preconditions: { uid } }); // false: already gone
    } catch (error) {
      if (ApiError.isConflict(error)) return; // a new Pod by that name
      this.logger.warn({ err: messageOf(error), namespace, pod: name }, `pod ${namespace}/${name}: forced deletion failed`);
    }
  }

  private fail(run: PodRun, reason: string, message: string): void {
    if (run.deleted) return;
    run.state = 'failed';
    run.ready = false;
    run.failure = { reason, message };
    run.readySince = new Date().toISOString();
    run.logger.warn({ reason }, message);
    void this.publish(run);
  }

  /** Queues a status write of the Pod's current state; writes go out in order, each with the state at send time. */
  private publish(run: PodRun): Promise<void> {
    run.statusWrites = run.statusWrites.then(() => this.writeStatus(run));
    return run.statusWrites;
  }

  /** Sends the current status; retries briefly when the API server is unreachable or busy, as a kubelet would keep trying. */
  private async writeStatus(run: PodRun): Promise<void> {
    const ref = { namespace: run.namespace, name: run.name };
    for (let attempt = 1; !run.deleted && !this.stopped; attempt++) {
      try {
        await this.podsApi.patch(ref, podStatus(run) as MergePatch<Pod>, { subresource: 'status' });
        return;
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return; // deleted meanwhile
        const transient = error instanceof ApiError && (error.status === 0 || error.status === 429 || error.status >= 500);
        if (!transient || attempt >= STATUS_ATTEMPTS) {
          run.logger.warn({ err: messageOf(error) }, `pod ${run.namespace}/${run.name}: status update failed`);
          return;
        }
        await sleep(250 * attempt);
      }
    }
  }

  /** Tracks a process group until it exits, so that no way out of this process leaves it behind. */
  private register(child: ChildProcess): void {
    if (child.pid === undefined) return;
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    if (this.ownsWorkDir) registerPid(this.workDir, child.pid);
  }

  /** On process exit: synchronous, so only signals. */
  private killAllNow(): void {
    for (const child of this.children) if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
  }
}

/** The merge patch for `pods/<name>/status` that describes a run as a kubelet would. */
function podStatus(run: PodRun): Record<string, unknown> {
  const up = run.state === 'running' || run.state === 'restarting';
  const ready = up && run.ready;
  const condition = (type: string, status: boolean, since = run.startTime): Record<string, unknown> => ({
    type,
    status: status ? 'True' : 'False',
    lastProbeTime: null,
    lastTransitionTime: since,
  });
  const initialized = run.initStatuses.every((s) => s.terminated?.exitCode === 0);
  const phase =
    run.state === 'initializing' ? 'Pending' : up ? 'Running' : run.state === 'exited' && run.terminated?.exitCode === 0 ? 'Succeeded' : 'Failed';
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
      ...(run.initStatuses.length > 0 ? { initContainerStatuses: run.initStatuses.map(initStatus) } : {}),
      containerStatuses: [mainStatus(run, ready, up)],
    },
  };
}

function initStatus(status: { name: string; image: string; terminated?: Termination }): Record<string, unknown> {
  return {
    name: status.name,
    image: status.image,
    imageID: '',
    ready: status.terminated?.exitCode === 0,
    restartCount: 0,
    state: status.terminated ? { terminated: status.terminated } : { waiting: { reason: 'PodInitializing' } },
  };
}

function mainStatus(run: PodRun, ready: boolean, up: boolean): Record<string, unknown> {
  let state: Record<string, unknown>;
  if (up) state = { running: { startedAt: run.startedAt } };
  else if (run.terminated) state = { terminated: run.terminated };
  else state = { waiting: { reason: run.failure?.reason ?? 'PodInitializing', ...(run.failure ? { message: run.failure.message } : {}) } };
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

type ExitOutcome = { code: number | null; signal: NodeJS.Signals | null } | { error: Error };

/** The first of 'exit' or a spawn 'error' (after which 'exit' may never come). */
function exitOf(child: ChildProcess): Promise<ExitOutcome> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ error }));
  });
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  return code ?? 128 + (signalNumber(signal) ?? 0);
}

function signalNumber(signal: NodeJS.Signals | null): number | undefined {
  return signal ? osConstants.signals[signal] : undefined;
}


function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A readinessProbe's `failureThreshold`; Kubernetes' default when it gives no positive whole number. */
function failureThreshold(probe: unknown): number {
  const value = typeof probe === 'object' && probe !== null ? (probe as { failureThreshold?: unknown }).failureThreshold : undefined;
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : DEFAULT_FAILURE_THRESHOLD;
}

function stringList(value: unknown, where: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string')) throw new UnrunnablePod(`${where} is not a list of strings`);
  return value;
}

/**
 * The container's environment: PATH and HOME so programs run at all, then its `env` with `$(VAR)`
 * references expanded and the volume path rewritten. Of `valueFrom`, only Pod fields are supported.
 */
function containerEnv(value: unknown, where: string, context: { pod: Pod; dir: string }): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: context.dir,
    HOSTNAME: context.pod.metadata?.name ?? '',
  };
  if (value === undefined || value === null) return env;
  if (!Array.isArray(value)) throw new UnrunnablePod(`${where} is not a list`);
  for (const [i, entry] of (value as EnvVar[]).entries()) {
    if (typeof entry?.name !== 'string' || !entry.name) throw new UnrunnablePod(`${where}[${i}] has no name`);
    if (entry.valueFrom !== undefined) {
      const field = entry.valueFrom.fieldRef?.fieldPath;
      const resolved = typeof field === 'string' ? podField(context.pod, field) : undefined;
      if (resolved === undefined) {
        throw new UnrunnablePod(`${where}[${i}] (${entry.name}): only valueFrom.fieldRef of metadata.name/namespace/uid, status.podIP/hostIP and spec.nodeName is supported`);
      }
      env[entry.name] = resolved;
    } else {
      env[entry.name] = rewriteVolume(expand(typeof entry.value === 'string' ? entry.value : '', env), context.dir);
    }
  }
  return env;
}

function podField(pod: Pod, path: string): string | undefined {
  switch (path) {
    case 'metadata.name':
      return pod.metadata?.name ?? '';
    case 'metadata.namespace':
      return pod.metadata?.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata?.uid ?? '';
    case 'status.podIP':
    case 'status.hostIP':
      return LOCALHOST;
    case 'spec.nodeName':
      return 'localhost';
    default:
      return undefined;
  }
}

/** Kubernetes' `$(VAR)` expansion in command, args and env values; `$$` escapes, unknown names stay as written. */
function expand(text: string, env: Record<string, string>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name: string | undefined) => {
    if (name === undefined) return '$';
    return env[name] ?? match;
  });
}

/** Replaces the volume path where it starts a path (whole word, after `=`, a quote, a comma...) by the Pod's folder. */
function rewriteVolume(text: string, dir: string): string {
  return text.replace(VOLUME_PATTERN, (_match, before: string) => `${before}${dir}`);
}

/** A flag's value in the container's command line (`--flag=value` or `--flag value`, also inside `sh -c`), or `ETCD_<FLAG>`. */
function flagValue(plan: ContainerPlan, flag: string): string | undefined {
  const line = plan.args.join(' ');
  const escaped = flag.replace(/[-]/g, '\\-');
  const match = new RegExp(`(?:^|\\s)--?${escaped}(?:=|\\s+)['"]?([^\\s'"]+)`).exec(line);
  return match?.[1] ?? plan.env[`ETCD_${flag.toUpperCase().replace(/-/g, '_')}`];
}

function firstURL(list: string | undefined): string | undefined {
  return list?.split(',').map((url) => url.trim()).find(Boolean);
}

/** Whether something already listens on the URL's port: we try to listen there ourselves, briefly. */
function portInUse(url: string): Promise<boolean> {
  let host: string;
  let port: number;
  try {
    const parsed = new URL(url);
    host = parsed.hostname.replace(/^\[|\]$/g, '');
    port = Number(parsed.port);
  } catch {
    return Promise.resolve(false); // etcd itself will reject the URL, with a better message
  }
  if (!port) return Promise.resolve(false);
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(false)));
  });
}

/** One `GET <clientURL>/health`; true for HTTP 200 (etcd answers 503 while it has no leader). */
function probeHealth(clientURL: string): Promise<boolean> {
  return new Promise((resolve) => {
    const url = `${clientURL.replace(/\/+$/, '')}/health`;
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    try {
      const req = send(url, { method: 'GET', timeout: PROBE_TIMEOUT_MS, agent: false, rejectUnauthorized: false }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(false));
      req.end();
    } catch {
      resolve(false);
    }
  });
}

function tailOf(file: string, chars = 2_000): string {
  try {
    return readFileSync(file, 'utf8').trim().slice(-chars);
  } catch {
    return '';
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  if (name.includes('/')) return isExecutable(name) ? name : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The etcd the test control plane uses: `KONDUCTOR_ETCD`, envtest's assets, the provisioned record, then PATH. */
function etcdBinary(): string | undefined {
  const override = process.env.KONDUCTOR_ETCD;
  if (override && isExecutable(override)) return override;
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets && isExecutable(join(assets, 'etcd'))) return join(assets, 'etcd');
  const record = join(cacheRoot(), 'binaries.json');
  if (existsSync(record)) {
    try {
      const recorded = (JSON.parse(readFileSync(record, 'utf8')) as { etcd?: unknown }).etcd;
      if (typeof recorded === 'string' && isExecutable(recorded)) return recorded;
    } catch {
      // A corrupt record: PATH still applies.
    }
  }
  return onPath('etcd');
}

function defaultBaseDir(): string {
  try {
    accessSync('/dev/shm', fsConstants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}
