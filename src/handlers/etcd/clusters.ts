import { setTimeout as sleep } from 'node:timers/promises';
import { daemon, on, type ChangeContext, type DaemonContext, type KubeObject, type OwnedContext } from 'konductor';
import { deleteIfOwn } from '../common/owned-by.js';
import { sameJson } from '../common/same-json.js';
import { ClusterDnsAddresses, type EtcdAddresses } from './addresses.js';
import { ClusterReconciler, type EtcdClusterObject } from './cluster-reconciler.js';
import { errorMessage } from './etcd-client.js';
import { memberLabels } from './member-pod.js';
import { memberDied, memberWake } from './member-wake.js';
import { API_VERSION, type EtcdClusterSpec, type EtcdClusterStatus } from './types.js';

type Context = DaemonContext<EtcdClusterSpec, EtcdClusterStatus>;

/** Options of {@link EtcdClusters}. */
export interface EtcdClustersOptions {
  /** Where members are reached; default: cluster DNS names. */
  addresses?: EtcdAddresses;
  /** How often a settled cluster is looked at. Default 8 s, as the original. */
  intervalMs?: number;
  /** How often while a step is under way (a member starting, a change pending). Default 1 s. */
  busyIntervalMs?: number;
  /**
   * Wake the cluster's worker as soon as a member Pod dies (deleted, failed, its etcd container
   * terminated), instead of at its next look. Default true; false reacts only at the next look.
   */
  wakeOnMemberDeath?: boolean;
  /**
   * How long a cluster's TLS Secrets, once read, are used before they are read again: a certificate
   * change rolls out within this. Default 30 s.
   */
  tlsRefreshMs?: number;
}

/**
 * `EtcdCluster`: one long-running worker (a daemon) per cluster, as the original operator. Each
 * look reads Pods and the member list and makes at most one change; a spec change wakes it at once.
 */
export class EtcdClusters {
  private readonly addresses: EtcdAddresses;
  private readonly intervalMs: number;
  private readonly busyIntervalMs: number;
  private readonly wakeOnMemberDeath: boolean;
  private readonly tlsRefreshMs: number | undefined;

  constructor(options: EtcdClustersOptions = {}) {
    this.addresses = options.addresses ?? new ClusterDnsAddresses();
    this.intervalMs = options.intervalMs ?? 8_000;
    this.busyIntervalMs = options.busyIntervalMs ?? 1_000;
    this.wakeOnMemberDeath = options.wakeOnMemberDeath ?? true;
    this.tlsRefreshMs = options.tlsRefreshMs;
  }

  @daemon(API_VERSION, 'etcdclusters', { cancellationTimeout: 30 })
  async run(context: Context): Promise<void> {
    const { client, logger, signal } = context;
    const reconciler = new ClusterReconciler({ client, addresses: this.addresses, logger, tlsRefreshMs: this.tlsRefreshMs });
    const wake = memberWake(context.memo);
    while (!signal.aborted) {
      wake.take(); // this step reads the Pods as they are now; a death seen during it wakes the next wait
      // `body` includes the status this worker just wrote, also before its watch event arrives.
      const cluster = context.body as EtcdClusterObject;
      const seen = cluster.metadata?.generation;
      let interval = this.busyIntervalMs;
      try {
        const outcome = await reconciler.step(cluster);
        interval = Math.min(outcome.busy ? this.busyIntervalMs : this.intervalMs, outcome.nextLookMs ?? Infinity);
        await this.writeStatus(cluster, context, outcome.status);
      } catch (error) {
        if (signal.aborted) return;
        logger.error({ err: errorMessage(error) }, 'reconcile failed; trying again');
      }
      await this.wait(context, interval, seen);
    }
  }

  /**
   * Waits for the interval, or less when the spec changes meanwhile (`body` is always the newest
   * state) or a member Pod dies ({@link memberDied}: the owned handler wakes this wait at once).
   */
  private async wait(context: Context, ms: number, generation: number | undefined): Promise<void> {
    const wake = memberWake(context.memo);
    const until = Date.now() + ms;
    while (!context.signal.aborted && Date.now() < until) {
      if (context.body.metadata?.generation !== generation || wake.take()) return;
      const pause = new AbortController();
      const signal = AbortSignal.any([context.signal, pause.signal]);
      await Promise.race([sleep(Math.min(200, until - Date.now()), undefined, { signal }).catch(() => undefined), wake.next(signal)]);
      pause.abort();
    }
  }

  /**
   * A member Pod changed: when it shows the member died, the cluster's worker looks at once (it
   * removes the dead member and adds a new one) instead of at its next look, up to 8 s later.
   * Only Pods the cluster controls (`adopt`) reach here, and only the `app=etcd` ones are watched.
   */
  @on.owned(API_VERSION, 'etcdclusters', { child: ['v1', 'pods'], labelSelector: 'app=etcd' })
  memberChanged({ memo, changes, logger }: OwnedContext<EtcdClusterObject>): void {
    if (!this.wakeOnMemberDeath) return;
    const dead = changes.filter((change) => memberDied(change.event, change.child)).map((change) => change.child.metadata?.name);
    if (dead.length === 0) return;
    logger.debug({ members: dead }, 'member Pod died; waking the cluster worker');
    memberWake(memo).wake();
  }

  /** Writes the status when it changed; the daemon's `body` shows it from then on (the framework's read-your-writes). */
  private async writeStatus(cluster: EtcdClusterObject, context: Context, status: EtcdClusterStatus): Promise<void> {
    const current = cluster.status ?? {};
    if (sameJson(current, status)) return;
    const name = context.name;
    const namespace = context.namespace!;
    // Keys removed from the new status are sent as null so a merge patch drops them.
    const removed = Object.fromEntries(Object.keys(current).filter((k) => !(k in status)).map((k) => [k, null]));
    await context.client.resource<EtcdClusterObject>(API_VERSION, 'etcdclusters').patchStatus({ namespace, name }, { ...removed, ...status });
  }

  /**
   * Deletes the member Pods and Services at once. Owner references let Kubernetes' garbage collector
   * do this too; doing it here stops the members promptly, and where no collector runs (a test plane).
   * Only the cluster's own go (controller reference with its uid): a Pod that merely carries the
   * member labels, or a Service named like the cluster's, belongs to someone else and stays, with a
   * Warning Event on the cluster naming it.
   */
  @on.deletion(API_VERSION, 'etcdclusters')
  async deleted({ client, body, name, namespace: maybeNamespace }: ChangeContext<EtcdClusterSpec, EtcdClusterStatus>): Promise<void> {
    const namespace = maybeNamespace!; // EtcdClusters are namespaced
    const pods = client.resource<KubeObject>('v1', 'pods');
    for await (const pod of pods.listAll({ namespace, labelSelector: memberLabels(name) })) await deleteIfOwn(pods, pod, 'Pod', body);
    const services = client.resource<KubeObject>('v1', 'services');
    for (const service of [name, `${name}-client`]) {
      const current = await services.find({ namespace, name: service });
      if (current) await deleteIfOwn(services, current, 'Service', body);
    }
  }
}
