import { ApiError, type ApiClient, type KubeObject, type ResourceClient } from 'konductor';
import { setCondition } from './conditions.js';
import type { WarnOnce } from './disaster-recovery.js';
import { clusterServices, type ClusterOwner } from './member-pod.js';
import type { EtcdClusterStatus, ObjectRef } from './types.js';

/** The peer and client Services of each cluster, created once per cluster object and never someone else's. */
export class ClusterServices {
  private readonly created = new Set<string>();
  private readonly api: ResourceClient<KubeObject>;

  constructor(client: ApiClient) {
    this.api = client.resource<KubeObject>('v1', 'services');
  }

  /**
   * Creates the peer and client Services, or checks that existing ones are this cluster's own
   * (controller owner reference). A Service of the same name someone else made (an `ExternalName`
   * to another namespace, a selector of their choice) is never used: it is reported in status and
   * with one Warning Event, and the cluster waits until it is deleted.
   * @returns false when a Service is not the cluster's own.
   */
  async ensure(
    cluster: ClusterOwner,
    ref: ObjectRef,
    status: EtcdClusterStatus,
    warn: WarnOnce,
  ): Promise<boolean> {
    status.serviceName = `${ref.name}-client`;
    status.clientPort = 2379;
    if (this.created.has(ref.uid)) return true;
    for (const service of clusterServices(cluster)) {
      const name = service.metadata!.name!;
      // Read first: after a restart the Services exist, and a create would be a refused write per Service.
      let existing = await this.api.find({ namespace: ref.namespace, name });
      if (!existing) {
        const created = await this.api.create(service).then(
          () => true,
          (error: unknown) => {
            if (!ApiError.isConflict(error)) throw error;
            return false;
          },
        );
        if (created) continue;
        // Created by someone else since we read: judge theirs.
        existing = await this.api.get({ namespace: ref.namespace, name });
      }
      if (!isOwnService(existing, ref.uid)) {
        const message = `Service ${ref.namespace}/${name} exists and was not created by the operator for this EtcdCluster (no controller owner reference to it); it is not used. Delete it so the operator can create its own`;
        warn('ForeignService', message);
        status.reason = message;
        status.conditions = setCondition(status.conditions, {
          type: 'Available',
          status: 'False',
          reason: 'ForeignService',
          message,
        });
        return false;
      }
    }
    this.created.add(ref.uid);
    return true;
  }
}

/** A Service this cluster controls: created by the operator, with the cluster as controller. */
function isOwnService(service: KubeObject, clusterUid: string): boolean {
  const owners = (service.metadata?.ownerReferences ?? []) as {
    uid?: string;
    controller?: boolean;
  }[];
  return owners.some((owner) => owner.controller === true && owner.uid === clusterUid);
}
