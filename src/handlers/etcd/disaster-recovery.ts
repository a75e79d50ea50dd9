import {
  ApiError,
  events,
  type ApiClient,
  type KubeObject,
  type Logger,
  type ResourceClient,
} from 'konductor';
import {
  newestBackupOf,
  quorumLostSince,
  restoreDueInMs,
  type BackupObject,
  type RestorePolicy,
} from './restore-policy.js';
import { API_VERSION, GROUP, type EtcdClusterStatus, type ObjectRef } from './types.js';

/** On an EtcdRestore disaster recovery created: the uid of the cluster it recovers, so a failed one is not retried over and over. */
export const RECOVERY_OF_ANNOTATION = `${GROUP}/recovery-of`;
/** On an EtcdRestore disaster recovery created: the revision of the backup it restores; writes after it are lost. */
export const RESTORE_REVISION_ANNOTATION = `${GROUP}/restore-revision`;
/** On an EtcdRestore disaster recovery created: the EtcdBackup whose file it restores. */
export const RESTORE_BACKUP_ANNOTATION = `${GROUP}/restore-backup`;

type Restore = KubeObject & { status?: { succeeded?: boolean; reason?: string } };

/** Reports a standing problem once (the cluster controller's Warning Event and status reason). */
export type WarnOnce = (reason: string, message: string) => void;

/**
 * Opt-in disaster recovery (`spec.restorePolicy`): once a cluster has been without quorum for the
 * policy's time, it is restored from the newest backup an EtcdBackup in its namespace took of it,
 * through an EtcdRestore named after it, which the restore handler carries out as if a user had
 * created it. Everything it reads and writes is in the cluster's own namespace.
 */
export class DisasterRecovery {
  private readonly restores: ResourceClient<Restore>;
  private readonly backups: ResourceClient<KubeObject & BackupObject>;

  constructor(
    client: ApiClient,
    private readonly logger: Logger,
  ) {
    this.restores = client.resource<Restore>(API_VERSION, 'etcdrestores');
    this.backups = client.resource<KubeObject & BackupObject>(API_VERSION, 'etcdbackups');
  }

  /**
   * One step while quorum is lost (the caller has set the `Quorum` condition False).
   * @returns ms until this should look again, or undefined for the usual interval.
   */
  async step(
    cluster: KubeObject,
    ref: ObjectRef,
    policy: RestorePolicy | undefined,
    status: EtcdClusterStatus,
    warn: WarnOnce,
  ): Promise<number | undefined> {
    const lostSince = quorumLostSince(status.conditions);
    const dueIn = restoreDueInMs(policy, lostSince, Date.now());
    if (dueIn === undefined || lostSince === undefined) return undefined;
    if (dueIn > 0) {
      status.reason = `${status.reason ?? 'lost quorum'}; restorePolicy restores the newest backup at ${new Date(lostSince + policy!.afterQuorumLostSeconds * 1000).toISOString()}`;
      return dueIn;
    }
    const existing = await this.restores.find({ namespace: ref.namespace, name: ref.name });
    if (existing) return this.existingRestore(cluster, existing, ref, status, warn);

    const listed = await this.backups.list({ namespace: ref.namespace });
    const backup = newestBackupOf(ref.name, listed.items);
    if (!backup) {
      const message = `lost quorum at ${new Date(lostSince).toISOString()} and restorePolicy is set, but no EtcdBackup in ${ref.namespace} has written a backup of this cluster: nothing to restore from. Bring members back or create an EtcdRestore`;
      warn('NoBackupToRestore', message);
      status.reason = message;
      return undefined;
    }
    await this.restores.create({
      apiVersion: API_VERSION,
      kind: 'EtcdRestore',
      metadata: {
        name: ref.name,
        namespace: ref.namespace,
        annotations: {
          [RECOVERY_OF_ANNOTATION]: ref.uid,
          [RESTORE_REVISION_ANNOTATION]: String(backup.revision),
          [RESTORE_BACKUP_ANNOTATION]: backup.backup,
        },
      },
      spec: { etcdCluster: { name: ref.name }, ...backup.source },
    });
    const lostFor = Math.round((Date.now() - lostSince) / 1000);
    const message = `quorum lost for ${lostFor} s (restorePolicy.afterQuorumLostSeconds ${policy!.afterQuorumLostSeconds}): restoring from EtcdBackup ${backup.backup}, taken at ${backup.takenAt} at revision ${backup.revision}; writes after revision ${backup.revision} are lost`;
    events.warn(cluster, 'DisasterRecovery', message);
    this.logger.warn(
      { backup: backup.backup, revision: backup.revision, lostForSeconds: lostFor },
      'quorum lost past restorePolicy: restoring the newest backup',
    );
    status.reason = message;
    return undefined;
  }

  /** An EtcdRestore named after the cluster exists: wait for it, report it, or replace a finished one. */
  private async existingRestore(
    cluster: KubeObject,
    existing: Restore,
    ref: ObjectRef,
    status: EtcdClusterStatus,
    warn: WarnOnce,
  ): Promise<number | undefined> {
    const failed = existing.status?.succeeded === false || Boolean(existing.status?.reason);
    const ours = existing.metadata?.annotations?.[RECOVERY_OF_ANNOTATION] === ref.uid;
    // Under way, or this cluster's own recovery done and the cluster about to be replaced: wait.
    if (!failed && (existing.status?.succeeded !== true || ours)) {
      status.reason = `restoring from a backup through EtcdRestore ${ref.namespace}/${ref.name}`;
      return undefined;
    }
    if (ours) {
      // This cluster's own recovery failed. Trying the same again would loop.
      const message = `disaster recovery through EtcdRestore ${ref.namespace}/${ref.name} did not restore the cluster (${existing.status?.reason ?? 'no reason given'}); it is not tried again: fix the backup and delete that EtcdRestore, or create one by hand`;
      warn('DisasterRecoveryFailed', message);
      status.reason = message;
      return undefined;
    }
    // A finished restore of an earlier cluster by this name is a record of the past: the new one takes its name.
    await this.restores
      .delete(
        { namespace: ref.namespace, name: ref.name },
        { preconditions: { uid: existing.metadata!.uid! } },
      )
      .catch((error: unknown) => {
        if (!ApiError.isConflict(error)) throw error;
      });
    events.info(
      cluster,
      'ReplacingRestore',
      `deleted the finished EtcdRestore ${ref.namespace}/${ref.name} (succeeded: ${existing.status?.succeeded === true}) to restore this cluster under its name`,
    );
    this.logger.info(
      { restore: ref.name },
      'deleted a finished EtcdRestore to restore the cluster under its name',
    );
    return 1_000;
  }
}
