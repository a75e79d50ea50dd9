import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Subscription } from 'rxjs';
import {
  ApiClient,
  ApiError,
  silentLogger,
  type Logger,
  type ResourceClient,
} from '../../../src/framework/index.js';
import { watchResource } from '../../../src/framework/watching/watch-stream.js';
import type { WatchEvent } from '../../../src/framework/watching/watch-events.js';
import { killGroup } from '../../../src/testing/managed-process.js';
import { defaultBaseDir } from '../../../src/testing/scratch-dir.js';
import { ContainerExecutables } from './executables.js';
import { LocalPod, type PodHost } from './local-pod.js';
import type { LoopbackAddresses } from './loopback-addresses.js';
import { messageOf, podKey, PODS, type Pod } from './pod.js';
import { newPodRun } from './pod-run.js';
import { ProcessGroups } from './process-groups.js';

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

const START_TIMEOUT_MS = 30_000;

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
  private readonly namespace: string | undefined;
  private readonly workDir: string;
  private readonly ownsWorkDir: boolean;
  private readonly host: PodHost;
  private readonly processGroups: ProcessGroups;
  private readonly pods = new Map<string, LocalPod>();
  private readonly queues = new Map<string, Promise<void>>();
  private subscription: Subscription | undefined;
  private started = false;
  private stopped = false;

  /** Creates the work folder; nothing runs before {@link start}. */
  constructor(options: EtcdPodRunnerOptions) {
    this.client = new ApiClient(options.kubeConfig);
    this.podsApi = this.client.resource<Pod>('v1', 'pods');
    this.namespace = options.namespace;
    this.logger = (options.logger ?? silentLogger()).child({ component: 'etcd-pod-runner' });
    this.ownsWorkDir = options.workDir === undefined;
    this.workDir = options.workDir ?? mkdtempSync(join(defaultBaseDir(), 'konductor-etcd-pods-'));
    mkdirSync(this.workDir, { recursive: true });
    this.processGroups = new ProcessGroups(this.ownsWorkDir ? this.workDir : undefined);
    this.host = {
      podsApi: this.podsApi,
      secretsApi: this.client.resource('v1', 'secrets'),
      addresses: options.addresses,
      processes: this.processGroups,
      executables: new ContainerExecutables(),
      stopped: () => this.stopped,
    };
  }

  /** Starts watching Pods; resolves once the initial listing has been handled (its Pods are starting). */
  async start(): Promise<void> {
    if (this.started) throw new Error('EtcdPodRunner: already started');
    this.started = true;
    this.processGroups.guard();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `EtcdPodRunner: the initial Pod listing in ${this.namespace ?? 'all namespaces'} did not complete within ${START_TIMEOUT_MS} ms`,
            ),
          ),
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
    await Promise.allSettled([...this.pods.values()].map((pod) => this.teardown(pod)));
    this.processGroups.release();
    if (this.ownsWorkDir) rmSync(this.workDir, { recursive: true, force: true });
    this.client.close();
  }

  /**
   * Sends `signal` to the process group of a Pod's main container, to simulate a crash; the Pod then
   * goes Failed like any unexpected exit. Returns false when the Pod has no running process.
   */
  kill(namespace: string, podName: string, signal: NodeJS.Signals = 'SIGKILL'): boolean {
    const pid = this.pods.get(podKey(namespace, podName))?.run.child?.pid;
    if (pid === undefined) return false;
    killGroup(pid, signal);
    return true;
  }

  /** The main processes running now. */
  processes(): RunningEtcdProcess[] {
    const running: RunningEtcdProcess[] = [];
    for (const { run } of this.pods.values()) {
      const pid = run.child?.pid;
      if (pid !== undefined)
        running.push({ namespace: run.namespace, pod: run.name, pid, dataDir: run.dir });
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
      .then(() =>
        this.stopped ? undefined : this.handle(event.type, event.object, namespace, name),
      )
      .catch((error: unknown) =>
        this.logger.error(
          { err: error, namespace, pod: name },
          `pod ${namespace}/${name}: handling a ${event.type} event failed`,
        ),
      );
    this.queues.set(key, next);
    void next.then(() => {
      if (this.queues.get(key) === next) this.queues.delete(key);
    });
  }

  private async handle(
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    pod: Pod,
    namespace: string,
    name: string,
  ): Promise<void> {
    const key = podKey(namespace, name);
    let local = this.pods.get(key);
    const uid = pod.metadata?.uid ?? '';
    if (type === 'DELETED') {
      if (local?.run.uid === uid) await this.teardown(local);
      return;
    }
    if (local && local.run.uid !== uid) {
      // Deleted and recreated under the same name while we were not looking: the old one is gone.
      await this.teardown(local);
      local = undefined;
    }
    if (pod.metadata?.deletionTimestamp) {
      if (local) await this.teardown(local);
      await this.forceDelete(namespace, name, uid);
      return;
    }
    if (local) {
      await local.update(pod);
      return;
    }
    const phase = pod.status?.phase;
    if (phase === 'Running' || phase === 'Succeeded' || phase === 'Failed') return; // another runner's, or a finished one
    this.launch(pod, namespace, name, uid);
  }

  /** Takes a new Pod on; it boots in the background. */
  private launch(pod: Pod, namespace: string, name: string, uid: string): void {
    const run = newPodRun({
      namespace,
      name,
      uid,
      dir: join(this.workDir, `${namespace}_${name}`),
      labels: pod.metadata?.labels ?? {},
      logger: this.logger.child({ namespace, pod: name }),
    });
    const local = new LocalPod(run, this.host);
    this.pods.set(run.key, local);
    local.start(pod);
  }

  /** Forgets the Pod and stops it. */
  private async teardown(local: LocalPod): Promise<void> {
    if (this.pods.get(local.run.key) === local) this.pods.delete(local.run.key);
    await local.teardown();
  }

  /** Without a kubelet nobody confirms a graceful deletion; finish it. */
  private async forceDelete(namespace: string, name: string, uid: string): Promise<void> {
    try {
      await this.podsApi.delete(
        { namespace, name },
        { gracePeriodSeconds: 0, preconditions: { uid } },
      ); // false: already gone
    } catch (error) {
      if (ApiError.isConflict(error)) return; // a new Pod by that name
      this.logger.warn(
        { err: messageOf(error), namespace, pod: name },
        `pod ${namespace}/${name}: forced deletion failed`,
      );
    }
  }
}
