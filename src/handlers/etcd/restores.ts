import { randomBytes } from 'node:crypto';
import {
  ApiError,
  events,
  on,
  TemporaryError,
  type ApiClient,
  type ChangeContext,
  type KubeObject,
  type Logger,
  type ResourceClient,
} from 'konductor';
import { DEFAULT_BACKUP_ROOT } from './backups.js';
import { BackupServer, downloadURL, type RestoreDownload } from './backup-server.js';
import { backupTarget, InvalidSpecError } from './backup-target.js';
import { RESTORE_REVISION_ANNOTATION } from './disaster-recovery.js';
import { errorMessage } from './etcd-client.js';
import { memberLabels } from './member-pod.js';
import {
  RESTORE_FROM_ANNOTATION,
  RESTORED_BY_ANNOTATION,
  SEED_INIT_CONTAINER,
} from './restore-annotations.js';
import {
  readRestoreRecord,
  recordCluster,
  startProblem,
  restoreSource,
  type RecordedCluster,
  type RestoreRecord,
  type RestoreSource,
} from './restore-record.js';
import { CorruptSnapshotError, fingerprintSnapshot } from './snapshot-trailer.js';
import { BackupNotFoundError } from './storage/index.js';
import { readTLSPolicy } from './tls-policy.js';
import { readClusterTLS } from './tls-secrets.js';
import { API_VERSION, type EtcdRestoreSpec, type EtcdRestoreStatus } from './types.js';

/** Options of {@link EtcdRestores}. */
export interface EtcdRestoresOptions {
  /** The directory `Local` backups live under; as for {@link EtcdBackups}. */
  localRoot?: string;
  /** Where the backup server listens; default 0.0.0.0:19999 (the `etcd-restore-operator` Service in deploy/). */
  serve?: { host?: string; port?: number; url?: string };
}

type Restore = KubeObject & { spec?: Partial<EtcdRestoreSpec>; status?: EtcdRestoreStatus };
type Cluster = KubeObject & { spec?: Record<string, unknown> };
interface Pod extends KubeObject {
  spec?: { initContainers?: { name?: string }[] };
  status?: { phase?: string };
}

/**
 * `EtcdRestore`: replaces the named EtcdCluster with a new one whose seed member starts from the
 * backup; the cluster controller then scales it back to `spec.size`.
 *
 * Nothing is deleted before the backup is known to be readable and the cluster's spec is recorded
 * in the restore's status; every step after that reads the status, so a retry after any failure
 * (an API error, a slow deletion, an operator restart) finishes the restore from there.
 */
export class EtcdRestores {
  private readonly localRoot: string;
  private server: BackupServer | undefined;
  private client: ApiClient | undefined;

  constructor(private readonly options: EtcdRestoresOptions = {}) {
    this.localRoot = options.localRoot ?? process.env.KONDUCTOR_BACKUP_ROOT ?? DEFAULT_BACKUP_ROOT;
  }

  @on.create(API_VERSION, 'etcdrestores')
  async restore(context: ChangeContext<EtcdRestoreSpec, EtcdRestoreStatus>): Promise<void> {
    const { client, name, logger, patch } = context;
    const namespace = context.namespace!;
    const restoreRef = { namespace, name };
    // The status written by earlier attempts, not a possibly older copy from the watch.
    const restore = await restores(client).get(restoreRef);
    if (restore.metadata?.uid !== context.body.metadata?.uid) return; // deleted and recreated meanwhile: the new one has its own run
    if (restore.status?.succeeded || restore.status?.reason) return;
    try {
      const record = readRestoreRecord(restore.status);
      // Once the record exists it alone is acted on: a later spec edit cannot strand the restore.
      const problem = startProblem(name, (context.body as Restore).spec, record);
      if (problem) throw new InvalidSpecError(problem);
      if (!record.source || !record.token) {
        // The storage as it is now, once: later edits of the spec (an S3 endpoint...) change nothing.
        const source = restoreSource((context.body as Restore).spec);
        if (!source)
          throw new InvalidSpecError(
            `unknown backupStorageType ${JSON.stringify(restore.spec?.backupStorageType)}: use S3 or Local`,
          );
        record.source = source;
        record.token = randomBytes(32).toString('hex');
        await this.writeRecord(client, restoreRef, { source: record.source, token: record.token });
      }
      const clusterRef = { namespace, name };
      const current = await clusters(client).find(clusterRef);
      if (
        current &&
        current.metadata?.annotations?.[RESTORED_BY_ANNOTATION] === restore.metadata?.uid
      ) {
        Object.assign(patch.status, { succeeded: true, reason: null });
        return;
      }
      if (!record.cluster) {
        if (!current)
          throw new InvalidSpecError(
            `EtcdCluster ${namespace}/${name} does not exist: a restore recreates an existing cluster with its spec`,
          );
        // The recreated cluster starts only with usable TLS Secrets: never delete the cluster for one that would wait.
        const tlsProblem = await clusterTLSProblem(client, namespace, current.spec?.TLS);
        if (tlsProblem)
          throw new InvalidSpecError(
            `EtcdCluster ${namespace}/${name} was left alone: the cluster it would be recreated as could not start (${tlsProblem}). Fix the Secrets, then delete this EtcdRestore and create it again`,
          );
        // Only a backup that reads back whole is worth deleting the cluster for.
        const backup = await this.checkBackup(client, namespace, record.source);
        record.backup = backup;
        record.cluster = recordCluster(current, [RESTORE_FROM_ANNOTATION, RESTORED_BY_ANNOTATION]);
        await this.writeRecord(client, restoreRef, { backup, cluster: record.cluster });
        logger.info(
          { cluster: name, backup: backup.location, bytes: backup.size },
          'backup checked and cluster spec recorded; replacing the cluster',
        );
      }
      if (current) {
        if (current.metadata?.uid !== record.cluster.uid) {
          throw new InvalidSpecError(
            `EtcdCluster ${namespace}/${name} was replaced by another object during the restore; it was left alone. Delete this EtcdRestore and create it again to restore over the new one`,
          );
        }
        await this.deleteCluster(client, clusterRef, record.cluster.uid, `${namespace}/${name}`);
      }
      const baseURL = await this.ensureServer(client, logger);
      const created = await this.createCluster(client, namespace, name, record.cluster, {
        [RESTORE_FROM_ANNOTATION]: downloadURL(baseURL, namespace, name, record.token),
        [RESTORED_BY_ANNOTATION]: restore.metadata!.uid!,
      });
      events.info(
        restore,
        'Restoring',
        `recreated EtcdCluster ${name} from ${record.backup?.location ?? 'the backup'}`,
      );
      reportRestored(created, restore, record.backup?.location);
      logger.info({ cluster: name }, 'recreated the cluster from the backup');
      Object.assign(patch.status, { succeeded: true, reason: null });
    } catch (error) {
      if (!(error instanceof InvalidSpecError)) throw error; // API hiccups and slow deletions: retried by the framework
      const reason = errorMessage(error);
      events.warn(restore, 'InvalidSpec', reason);
      logger.warn({ err: reason }, 'restore refused');
      Object.assign(patch.status, { succeeded: false, reason });
    }
  }

  /** After an operator restart, a seed Pod may still need to download its backup. */
  @on.resume(API_VERSION, 'etcdrestores')
  async resumed({
    client,
    logger,
  }: ChangeContext<EtcdRestoreSpec, EtcdRestoreStatus>): Promise<void> {
    await this.ensureServer(client, logger);
  }

  /** Stops the backup server (tests, shutdown). */
  async stop(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
  }

  /** Reads the whole backup and checks its SHA-256 trailer. Missing or corrupt: final; unreachable: retried. */
  private async checkBackup(
    client: ApiClient,
    namespace: string,
    source: RestoreSource,
  ): Promise<NonNullable<RestoreRecord['backup']>> {
    const target = await this.target(client, namespace, source);
    const location = target.storage.describe(target.path);
    try {
      const fingerprint = await fingerprintSnapshot(await target.storage.read(target.path));
      return { ...fingerprint, location };
    } catch (error) {
      if (error instanceof BackupNotFoundError)
        throw new InvalidSpecError(`backup ${location} does not exist: check the path`);
      if (error instanceof CorruptSnapshotError)
        throw new InvalidSpecError(
          `backup ${location} is unusable (${error.message}); the cluster was left alone`,
        );
      throw new TemporaryError(`cannot read backup ${location}: ${errorMessage(error)}`, {
        delay: 10,
        cause: error,
      });
    } finally {
      target.close();
    }
  }

  private async writeRecord(
    client: ApiClient,
    ref: NamespacedRef,
    status: Record<string, unknown>,
  ): Promise<void> {
    await restores(client).patchStatus(ref, status);
  }

  /**
   * Deletes exactly the recorded cluster (uid precondition). While it is still being deleted (its
   * last reconcile stops its members) the handler lets go and looks again in a second, so a finalizer
   * on the tenant's cluster never holds a handler slot.
   */
  private async deleteCluster(
    client: ApiClient,
    ref: NamespacedRef,
    uid: string,
    what: string,
  ): Promise<void> {
    // Gone already, or a precondition failure (another object by that name): nothing of ours to delete.
    await clusters(client)
      .delete(ref, { preconditions: { uid } })
      .catch((error: unknown) => {
        if (!ApiError.isConflict(error)) throw error;
      });
    const still = await clusters(client).find(ref);
    if (still?.metadata?.uid === uid) {
      throw new TemporaryError(
        `EtcdCluster ${what} is still being deleted; its spec is recorded in this EtcdRestore's status`,
        { delay: DELETE_RETRY_SECONDS },
      );
    }
  }

  private async createCluster(
    client: ApiClient,
    namespace: string,
    name: string,
    recorded: RecordedCluster,
    annotations: Record<string, string>,
  ): Promise<Cluster> {
    const fresh = {
      apiVersion: API_VERSION,
      kind: 'EtcdCluster',
      metadata: {
        name,
        namespace,
        ...(recorded.labels ? { labels: recorded.labels } : {}),
        annotations: { ...(recorded.annotations ?? {}), ...annotations },
        ...(recorded.ownerReferences ? { ownerReferences: recorded.ownerReferences } : {}),
      },
      spec: { ...recorded.spec, paused: false },
    };
    return clusters(client).create(fresh);
  }

  private target(
    client: ApiClient,
    namespace: string,
    source: RestoreSource,
  ): ReturnType<typeof backupTarget> {
    return backupTarget(
      client,
      namespace,
      { storageType: source.backupStorageType, s3: source.s3, local: source.local },
      this.localRoot,
    );
  }

  /** The download state of one restore, for the backup server; read fresh from the API on each request. */
  private async download(namespace: string, name: string): Promise<RestoreDownload | undefined> {
    const client = this.client!;
    const restore = await restores(client).find({ namespace, name });
    if (!restore) return undefined;
    const record = readRestoreRecord(restore.status);
    const { token, source, backup } = record;
    if (!token || !source || !backup) return undefined;
    return {
      token,
      expected: backup,
      pendingSeed: () => this.pendingSeed(client, namespace, name, restore.metadata?.uid),
      open: async () => {
        const target = await this.target(client, namespace, source);
        try {
          return { stream: await target.storage.read(target.path), close: () => target.close() };
        } catch (error) {
          target.close();
          throw error;
        }
      },
    };
  }

  /** The uid of the recreated cluster's seed Pod while it waits for its backup (Pending, with the download init container). */
  private async pendingSeed(
    client: ApiClient,
    namespace: string,
    name: string,
    restoreUid: string | undefined,
  ): Promise<string | undefined> {
    const cluster = await clusters(client).find({ namespace, name });
    const clusterUid = cluster?.metadata?.uid;
    if (
      !clusterUid ||
      !restoreUid ||
      cluster.metadata?.annotations?.[RESTORED_BY_ANNOTATION] !== restoreUid
    )
      return undefined;
    const pods = await client
      .resource<Pod>('v1', 'pods')
      .list({ namespace, labelSelector: memberLabels(name) });
    const seed = pods.items.find(
      (pod) =>
        !pod.metadata?.deletionTimestamp &&
        (pod.metadata?.ownerReferences?.[0] as { uid?: string } | undefined)?.uid === clusterUid &&
        (pod.status?.phase ?? 'Pending') === 'Pending' &&
        (pod.spec?.initContainers ?? []).some((c) => c.name === SEED_INIT_CONTAINER),
    );
    return seed?.metadata?.uid;
  }

  private ensureServer(client: ApiClient, logger: Logger): Promise<string> {
    this.client = client;
    this.server ??= new BackupServer((namespace, name) => this.download(namespace, name), logger, {
      host: this.options.serve?.host ?? '0.0.0.0',
      port: this.options.serve?.port ?? 19999,
      url: this.options.serve?.url ?? defaultURL(this.options.serve?.host),
    });
    return this.server.start();
  }
}

/** Seconds before a restore whose cluster is still being deleted looks again. */
export const DELETE_RETRY_SECONDS = 1;

/**
 * Tells the recreated cluster's own Events what it was restored from and what was lost: after a
 * disaster recovery, every write after the backup's revision.
 */
function reportRestored(cluster: Cluster, restore: Restore, location: string | undefined): void {
  const what = `recreated by EtcdRestore ${restore.metadata?.name} from backup ${location ?? '(unknown)'}`;
  // Anyone who can create an EtcdRestore can set the annotation: only digits reach the message.
  const revision = restore.metadata?.annotations?.[RESTORE_REVISION_ANNOTATION];
  if (revision !== undefined && /^\d{1,20}$/.test(revision)) {
    events.warn(
      cluster,
      'RestoredFromBackup',
      `${what} by disaster recovery: the data is as of revision ${revision}; writes after revision ${revision} are lost`,
    );
  } else {
    events.info(
      cluster,
      'RestoredFromBackup',
      `${what}: writes after the backup was taken are lost`,
    );
  }
}

interface NamespacedRef {
  namespace: string;
  name: string;
}

const restores = (client: ApiClient): ResourceClient<Restore> =>
  client.resource<Restore>(API_VERSION, 'etcdrestores');
const clusters = (client: ApiClient): ResourceClient<Cluster> =>
  client.resource<Cluster>(API_VERSION, 'etcdclusters');

/** In a cluster, Pods reach the operator through the `etcd-restore-operator` Service (deploy/40-restore-service.yaml). */
function defaultURL(host: string | undefined): string | undefined {
  if (host && host !== '0.0.0.0') return undefined; // a test or local run: the URL follows the bound port
  const namespace = process.env.POD_NAMESPACE ?? process.env.KONDUCTOR_LEASE_NAMESPACE;
  return namespace ? `http://etcd-restore-operator.${namespace}.svc:19999` : undefined;
}

/** Why the TLS of a cluster spec (`spec.TLS`, untrusted) would keep its members from starting; undefined when it would not, or names none. */
async function clusterTLSProblem(
  client: ApiClient,
  namespace: string,
  tls: unknown,
): Promise<string | undefined> {
  const read = readTLSPolicy(tls);
  if ('problem' in read) return read.problem;
  if (!read.policy) return undefined;
  const secrets = await readClusterTLS(client, namespace, read.policy);
  return 'problem' in secrets ? secrets.problem : undefined;
}
