import { kinds, on, type KubeObject, type Memo, type ReconcileContext } from 'konductor';
import { deleteIfOwn } from '../common/owned-by.js';
import { sameJson } from '../common/same-json.js';
import { ClusterDnsAddresses, type EtcdAddresses } from './addresses.js';
import { ClusterReconciler, type EtcdClusterObject } from './cluster-reconciler.js';
import { memberLabels } from './member-pod.js';
import { EtcdCluster } from './generated/etcd.database.coreos.com.js';

/** Options of {@link EtcdClusters}. */
export interface EtcdClustersOptions {
  /** Where members are reached; default: cluster DNS names. */
  addresses?: EtcdAddresses;
  /** How often a settled cluster is looked at. Default 8 s, as the original. */
  intervalMs?: number;
  /** How often while a step is under way (a member starting, a change pending). Default 1 s. */
  busyIntervalMs?: number;
  /**
   * How long a cluster's TLS Secrets, once read, are used before they are read again: a certificate
   * change rolls out within this. Default 30 s.
   */
  tlsRefreshMs?: number;
}

/** The key of a cluster's {@link ClusterReconciler} in its memo: it remembers what it reported. */
const RECONCILER = 'etcdClusterReconciler';

/**
 * `EtcdCluster`: one reconcile per cluster, run when the cluster or one of its member Pods changes
 * (a Pod it controls: a member dying is seen at once), and again after 1 s while a step is under way
 * or 8 s once settled, as the original operator looked. Each run reads Pods and the member list and
 * makes at most one change.
 */
export class EtcdClusters {
  private readonly addresses: EtcdAddresses;
  private readonly intervalMs: number;
  private readonly busyIntervalMs: number;
  private readonly tlsRefreshMs: number | undefined;

  constructor(options: EtcdClustersOptions = {}) {
    this.addresses = options.addresses ?? new ClusterDnsAddresses();
    this.intervalMs = options.intervalMs ?? 8_000;
    this.busyIntervalMs = options.busyIntervalMs ?? 1_000;
    this.tlsRefreshMs = options.tlsRefreshMs;
  }

  @on.reconcile(EtcdCluster, {
    owns: [{ kind: kinds.Pod, labelSelector: 'app=etcd' }],
    observedGeneration: false,
  })
  async reconcile(context: ReconcileContext<EtcdCluster>): Promise<number | undefined> {
    if (context.deleting) {
      await this.deleteMembers(context);
      return undefined;
    }
    const cluster = context.body as EtcdClusterObject;
    const outcome = await this.reconcilerOf(context).step(cluster);
    const current = cluster.status ?? {};
    if (!sameJson(current, outcome.status)) {
      // Keys removed from the new status are sent as null so the merge patch drops them.
      const removed = Object.fromEntries(
        Object.keys(current)
          .filter((key) => !(key in outcome.status))
          .map((key) => [key, null]),
      );
      Object.assign(context.patch.status, removed, outcome.status);
    }
    return (
      Math.min(
        outcome.busy ? this.busyIntervalMs : this.intervalMs,
        outcome.nextLookMs ?? Infinity,
      ) / 1000
    );
  }

  private reconcilerOf({
    memo,
    client,
    logger,
  }: {
    memo: Memo;
    client: ReconcileContext['client'];
    logger: ReconcileContext['logger'];
  }): ClusterReconciler {
    const existing = memo[RECONCILER];
    if (existing instanceof ClusterReconciler) return existing;
    const reconciler = new ClusterReconciler({
      client,
      addresses: this.addresses,
      logger,
      tlsRefreshMs: this.tlsRefreshMs,
    });
    memo[RECONCILER] = reconciler;
    return reconciler;
  }

  /**
   * The last run of a deleted cluster: its member Pods and Services go at once. Owner references let
   * Kubernetes' garbage collector do this too; doing it here stops the members promptly, and where no
   * collector runs (a test plane). Only the cluster's own go (controller reference with its uid): a
   * Pod that merely carries the member labels, or a Service named like the cluster's, belongs to
   * someone else and stays, with a Warning Event on the cluster naming it.
   */
  private async deleteMembers({
    client,
    body,
    name,
    namespace: maybeNamespace,
  }: ReconcileContext<EtcdCluster>): Promise<void> {
    const namespace = maybeNamespace!; // EtcdClusters are namespaced
    const pods = client.resource<KubeObject>('v1', 'pods');
    for await (const pod of pods.listAll({ namespace, labelSelector: memberLabels(name) }))
      await deleteIfOwn(pods, pod, 'Pod', body as unknown as KubeObject);
    const services = client.resource<KubeObject>('v1', 'services');
    for (const service of [name, `${name}-client`]) {
      const current = await services.find({ namespace, name: service });
      if (current) await deleteIfOwn(services, current, 'Service', body as unknown as KubeObject);
    }
  }
}
