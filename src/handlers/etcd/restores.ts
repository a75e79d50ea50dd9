import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, events, on, TemporaryError, type ApiClient, type ChangeContext, type KubeObject, type Logger } from 'konductor';
import { DEFAULT_BACKUP_ROOT } from './backups.js';
import { BackupServer } from './backup-server.js';
import { backupTarget, InvalidSpecError } from './backup-target.js';
import { errorMessage } from './etcd-client.js';
import { RESTORE_FROM_ANNOTATION, RESTORED_BY_ANNOTATION } from './restore-annotations.js';
import { API_VERSION, type EtcdRestoreSpec, type EtcdRestoreStatus } from './types.js';


/** Options of {@link EtcdRestores}. */
export interface EtcdRestoresOptions {
  /** The directory `Local` backups live under; as for {@link EtcdBackups}. */
  localRoot?: string;
  /** Where the backup server listens; default 0.0.0.0:19999 (the `etcd-restore-operator` Service in deploy/). */
  serve?: { host?: string; port?: number; url?: string };
  /** Seconds to wait for the old cluster to be deleted. Default 60. */
  deleteTimeoutSeconds?: number;
}

type Restore = KubeObject & { spec?: Partial<EtcdRestoreSpec>; status?: EtcdRestoreStatus };
type Cluster = KubeObject & { spec?: Record<string, unknown> };

/**
 * `EtcdRestore`: replaces the named EtcdCluster with a new one whose seed member starts from the
 * backup; the cluster controller then scales it back to `spec.size`.
 */
export class EtcdRestores {
  private readonly localRoot: string;
  private readonly deleteTimeoutMs: number;
  private server: BackupServer | undefined;
  private client: ApiClient | undefined;

  constructor(private readonly options: EtcdRestoresOptions = {}) {
    this.localRoot = options.localRoot ?? process.env.KONDUCTOR_BACKUP_ROOT ?? DEFAULT_BACKUP_ROOT;
    this.deleteTimeoutMs = (options.deleteTimeoutSeconds ?? 60) * 1000;
  }

  @on.create(API_VERSION, 'etcdrestores')
  async restore(context: ChangeContext<EtcdRestoreSpec, EtcdRestoreStatus>): Promise<void> {
    const { client, name, logger, patch } = context;
    const restore = context.body as Restore;
    const namespace = context.namespace!;
    if (context.status?.succeeded || context.status?.reason) return;
    try {
      const clusterName = restore.spec?.etcdCluster?.name;
      if (!clusterName) throw new InvalidSpecError('spec.etcdCluster.name must name the EtcdCluster to restore');
      const target = await this.target(client, namespace, restore);
      try {
        const exists = (await target.storage.list(target.path)).some((b) => b.name === target.path);
        if (!exists) throw new InvalidSpecError(`backup ${target.storage.describe(target.path)} does not exist: check the path`);
      } finally {
        target.close();
      }
      const baseURL = await this.ensureServer(client, logger);
      const clusterPath = `/apis/${API_VERSION}/namespaces/${namespace}/etcdclusters/${clusterName}`;
      const old = await client.request<Cluster>('GET', clusterPath).catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 404) return undefined;
        throw error;
      });
      if (old?.metadata?.annotations?.[RESTORED_BY_ANNOTATION] !== restore.metadata?.uid) {
        if (!old) throw new InvalidSpecError(`EtcdCluster ${namespace}/${clusterName} does not exist: a restore recreates an existing cluster with its spec`);
        await this.replace(client, clusterPath, old, {
          [RESTORE_FROM_ANNOTATION]: `${baseURL}/v1/backup/${namespace}/${name}`,
          [RESTORED_BY_ANNOTATION]: restore.metadata!.uid!,
        });
        events.info(restore, 'Restoring', `recreated EtcdCluster ${clusterName} from ${describe(restore)}`);
        logger.info({ cluster: clusterName }, 'recreated the cluster from the backup');
      }
      Object.assign(patch.status, { succeeded: true, reason: null });
    } catch (error) {
      if (error instanceof TemporaryError) throw error;
      const reason = errorMessage(error);
      if (!(error instanceof InvalidSpecError)) throw error; // API hiccups: retried by the framework
      events.warn(restore, 'InvalidSpec', reason);
      logger.warn({ err: reason }, 'restore refused');
      Object.assign(patch.status, { succeeded: false, reason });
    }
  }

  /** After an operator restart, a seed Pod may still need to download its backup. */
  @on.resume(API_VERSION, 'etcdrestores')
  async resumed({ client, logger }: ChangeContext<EtcdRestoreSpec, EtcdRestoreStatus>): Promise<void> {
    await this.ensureServer(client, logger);
  }

  /** Stops the backup server (tests, shutdown). */
  async stop(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
  }

  private async replace(client: ApiClient, path: string, old: Cluster, annotations: Record<string, string>): Promise<void> {
    await client.request('DELETE', path).catch((error: unknown) => {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    });
    const until = Date.now() + this.deleteTimeoutMs;
    for (;;) {
      const still = await client.request<Cluster>('GET', path).then(
        () => true,
        (error: unknown) => (error instanceof ApiError && error.status === 404 ? false : Promise.reject(error)),
      );
      if (!still) break;
      if (Date.now() > until) throw new TemporaryError(`EtcdCluster ${old.metadata?.namespace}/${old.metadata?.name} is still being deleted`, { delay: 2 });
      await sleep(250);
    }
    const meta = old.metadata!;
    const fresh = {
      apiVersion: API_VERSION,
      kind: 'EtcdCluster',
      metadata: {
        name: meta.name,
        namespace: meta.namespace,
        labels: meta.labels,
        annotations: { ...(meta.annotations ?? {}), ...annotations },
        ownerReferences: meta.ownerReferences,
      },
      spec: { ...(old.spec ?? {}), paused: false },
    };
    await client.request('POST', path.slice(0, path.lastIndexOf('/')), { body: fresh });
  }

  private target(client: ApiClient, namespace: string, restore: Restore): ReturnType<typeof backupTarget> {
    const spec = restore.spec ?? {};
    return backupTarget(client, namespace, { storageType: spec.backupStorageType, s3: spec.s3, local: spec.local }, this.localRoot);
  }

  private ensureServer(client: ApiClient, logger: Logger): Promise<string> {
    this.client = client;
    this.server ??= new BackupServer(
      async (namespace, name) => {
        const restore = await this.client!.request<Restore>('GET', `/apis/${API_VERSION}/namespaces/${namespace}/etcdrestores/${name}`).catch((error: unknown) => {
          if (error instanceof ApiError && error.status === 404) return undefined;
          throw error;
        });
        return restore ? this.target(this.client!, namespace, restore) : undefined;
      },
      logger,
      { host: this.options.serve?.host ?? '0.0.0.0', port: this.options.serve?.port ?? 19999, url: this.options.serve?.url ?? defaultURL(this.options.serve?.host) },
    );
    return this.server.start();
  }
}

/** In a cluster, Pods reach the operator through the `etcd-restore-operator` Service (deploy/40-restore-service.yaml). */
function defaultURL(host: string | undefined): string | undefined {
  if (host && host !== '0.0.0.0') return undefined; // a test or local run: the URL follows the bound port
  const namespace = process.env.POD_NAMESPACE ?? process.env.KONDUCTOR_LEASE_NAMESPACE;
  return namespace ? `http://etcd-restore-operator.${namespace}.svc:19999` : undefined;
}

function describe(restore: Restore): string {
  const spec = restore.spec ?? {};
  return spec.backupStorageType === 'S3' ? `s3://${spec.s3?.path}` : `local ${spec.local?.path}`;
}
