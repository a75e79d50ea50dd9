import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  events,
  on,
  timer,
  type ApiClient,
  type ChangeContext,
  type KubeObject,
  type Logger,
  type Patch,
  type TimerContext,
} from 'konductor';
import { ClusterDnsAddresses, memberClientURL, type EtcdAddresses } from './addresses.js';
import { clientServiceEndpoint, ownMemberPods, type ListedPod } from './backup-endpoints.js';
import { backupTarget, InvalidSpecError, type BackupTarget } from './backup-target.js';
import { errorMessage } from './etcd-client.js';
import { memberLabels } from './member-pod.js';
import { isObjectName } from './object-names.js';
import { takeSnapshot } from './snapshot.js';
import { CLIENT_KEYS, readTLSPolicy } from './tls-policy.js';
import { readTLSSecret, type ClientCredentials } from './tls-secrets.js';
import { backupIntervalSeconds, backupTimeoutSeconds, localQuotaProblem } from './backup-policy.js';
import { backupsToDelete, LocalStorage, periodicBackupName, s3Path } from './storage/index.js';
import { API_VERSION, type EtcdBackupSpec, type EtcdBackupStatus } from './types.js';

/** Where `Local` backups go unless told otherwise (each namespace in a folder of its own): mount a PVC here in the operator Pod. */
export const DEFAULT_BACKUP_ROOT = '/var/lib/konductor/etcd-backups';

/** Options of {@link EtcdBackups}. */
export interface EtcdBackupsOptions {
  addresses?: EtcdAddresses;
  /** The directory `Local` backups are written under. Default {@link DEFAULT_BACKUP_ROOT} (or `KONDUCTOR_BACKUP_ROOT`). */
  localRoot?: string;
}

type Backup = KubeObject & { spec?: Partial<EtcdBackupSpec>; status?: EtcdBackupStatus };

const intervalOf = (backup: Backup): number =>
  backupIntervalSeconds(backup.spec?.backupPolicy?.backupIntervalInSecond);
const isPeriodic = (backup: Backup): boolean => intervalOf(backup) > 0;

/**
 * `EtcdBackup`: a one-shot backup runs once when created; a periodic one is a timer whose interval
 * is `backupPolicy.backupIntervalInSecond` (kept in an annotation when a minute or longer, so an
 * operator restart neither skips nor repeats a backup).
 */
export class EtcdBackups {
  private readonly addresses: EtcdAddresses;
  private readonly localRoot: string;

  constructor(options: EtcdBackupsOptions = {}) {
    this.addresses = options.addresses ?? new ClusterDnsAddresses();
    this.localRoot = options.localRoot ?? process.env.KONDUCTOR_BACKUP_ROOT ?? DEFAULT_BACKUP_ROOT;
  }

  @on.create(API_VERSION, 'etcdbackups', { when: ({ body }) => !isPeriodic(body as Backup) })
  async oneShot(context: ChangeContext<EtcdBackupSpec, EtcdBackupStatus>): Promise<void> {
    // One-shot means once: a recorded outcome is final, as in the original.
    if (context.status?.succeeded || context.status?.Reason) return;
    await this.backUp(context.body as Backup, context.client, context.patch, context.logger, false);
  }

  @timer(API_VERSION, 'etcdbackups', {
    interval: (backup) => intervalOf(backup as Backup),
    when: ({ body }) => isPeriodic(body as Backup),
  })
  async periodic(context: TimerContext<EtcdBackupSpec, EtcdBackupStatus>): Promise<void> {
    await this.backUp(context.body as Backup, context.client, context.patch, context.logger, true);
  }

  /** Takes one backup and records the outcome in status; failures become `Reason` and a Warning Event, never a crash. */
  private async backUp(
    backup: Backup,
    client: ApiClient,
    patch: Patch,
    logger: Logger,
    periodic: boolean,
  ): Promise<void> {
    const namespace = backup.metadata!.namespace!;
    const previous = backup.status ?? {};
    const spec = backup.spec ?? {};
    const started = Date.now();
    const work = await mkdtemp(join(tmpdir(), 'konductor-backup-'));
    let target: BackupTarget | undefined;
    try {
      const problem = validate(spec);
      if (problem) throw new InvalidSpecError(problem);
      target = await backupTarget(
        client,
        namespace,
        { storageType: spec.storageType, s3: spec.s3, local: spec.local },
        this.localRoot,
      );
      const members = await memberEndpoints(
        client,
        this.addresses,
        namespace,
        spec.etcdEndpoints ?? [],
      );
      const credentials =
        members.operatorSecret === undefined
          ? undefined
          : await clientCredentials(
              client,
              namespace,
              spec.clientTLSSecret || members.operatorSecret,
              spec.clientTLSSecret
                ? 'spec.clientTLSSecret'
                : "the cluster's spec.TLS.static.operatorSecret",
            );
      const file = join(work, 'snapshot.db');
      const snapshot = await takeSnapshot(
        members.urls,
        file,
        backupTimeoutSeconds(spec.backupPolicy?.timeoutInSecond) * 1000,
        credentials,
      );
      const name = periodic
        ? periodicBackupName(target.path, snapshot.revision, new Date())
        : target.path;
      // Only files this EtcdBackup wrote are replaced or pruned (Local records owners; an S3 bucket is the credentials' own).
      const owner = { owner: `EtcdBackup ${backup.metadata!.name!}` };
      if (target.storage instanceof LocalStorage) {
        // The backup disk is shared by every namespace: each may fill only its share.
        const existing = (await target.storage.list('')).map((b) => b.name);
        const problem = localQuotaProblem(namespace, existing.length, existing.includes(name));
        if (problem) throw new Error(problem);
      }
      await target.storage.write(name, file, owner);
      let kept: number | undefined;
      const maxBackups = Number(spec.backupPolicy?.maxBackups ?? 0);
      if (periodic) {
        const storage = target.storage;
        const listed = (await storage.list(`${target.path}_v`)).map((b) => b.name);
        // Retention counts only this backup's own files: another EtcdBackup's newer ones must not push ours out.
        const names =
          storage instanceof LocalStorage ? await ownedBy(storage, listed, owner.owner) : listed;
        const doomed = backupsToDelete(target.path, names, maxBackups);
        let deleted = 0;
        for (const old of doomed) if (await target.storage.delete(old, owner)) deleted++;
        kept = names.length - deleted;
      }
      logger.info(
        {
          backup: target.storage.describe(name),
          revision: snapshot.revision,
          bytes: snapshot.bytes,
          ms: Date.now() - started,
        },
        'backup written',
      );
      Object.assign(patch.status, {
        succeeded: true,
        Reason: null,
        etcdVersion: snapshot.version,
        etcdRevision: Number(snapshot.revision),
        lastSuccessDate: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
        lastBackup: target.storage.describe(name),
        lastBackupPath:
          spec.storageType === 'S3' ? `${s3Path(spec.s3!.path).bucket}/${name}` : name,
        lastBackupCluster: soleCluster(namespace, spec.etcdEndpoints ?? []) ?? null,
        ...(kept !== undefined ? { backups: kept } : {}),
      });
    } catch (error) {
      const reason = errorMessage(error);
      logger.warn({ err: reason }, 'backup failed');
      // One Event per distinct failure, not one every interval.
      if (previous.Reason !== reason)
        events.warn(
          backup,
          error instanceof InvalidSpecError ? 'InvalidSpec' : 'BackupFailed',
          reason,
        );
      Object.assign(patch.status, { succeeded: false, Reason: reason });
    } finally {
      target?.close();
      await rm(work, { recursive: true, force: true });
    }
  }
}

/** The member URLs a backup dials, and the operator Secret of their cluster when it serves clients over TLS. */
interface MemberEndpoints {
  urls: string[];
  operatorSecret?: string;
}

/**
 * The client URLs of the member Pods of each cluster the endpoints name, after checking that each
 * names the client Service of an EtcdCluster in the backup's own namespace. The Service itself is
 * never dialled (the tenant may own it): only Pods controlled by that cluster, at the addresses the
 * cluster controller uses.
 */
async function memberEndpoints(
  client: ApiClient,
  addresses: EtcdAddresses,
  namespace: string,
  endpoints: readonly unknown[],
): Promise<MemberEndpoints> {
  const urls: string[] = [];
  const secrets = new Set<string | undefined>();
  for (const endpoint of endpoints) {
    const service = clientServiceEndpoint(namespace, endpoint);
    if ('problem' in service) throw new InvalidSpecError(service.problem);
    const cluster = await client
      .resource<KubeObject & { spec?: { TLS?: unknown } }>(API_VERSION, 'etcdclusters')
      .find({ namespace, name: service.cluster });
    const uid = cluster?.metadata?.uid;
    if (!uid)
      throw new InvalidSpecError(
        `etcdEndpoints entry ${JSON.stringify(endpoint)} names EtcdCluster ${namespace}/${service.cluster}, which does not exist`,
      );
    const tls = readTLSPolicy(cluster.spec?.TLS);
    if ('problem' in tls)
      throw new InvalidSpecError(`EtcdCluster ${namespace}/${service.cluster}: ${tls.problem}`);
    secrets.add(tls.policy?.serverSecret === undefined ? undefined : tls.policy.operatorSecret);
    const pods = await client
      .resource<KubeObject & ListedPod>('v1', 'pods')
      .list({ namespace, labelSelector: memberLabels(service.cluster) });
    const found = ownMemberPods(pods.items, service.cluster, uid)
      .map((pod) =>
        memberClientURL(
          addresses,
          namespace,
          service.cluster,
          { name: pod.metadata!.name!, podIP: pod.status?.podIP },
          tls.policy,
        ),
      )
      .filter((url): url is string => url !== undefined);
    if (found.length === 0) {
      throw new Error(
        `EtcdCluster ${namespace}/${service.cluster} has no running member Pods of its own to back up (only Pods the operator created for it are dialled, never the Service): wait until it runs, or unpause it`,
      );
    }
    urls.push(...found);
  }
  if (secrets.size > 1)
    throw new InvalidSpecError(
      'spec.etcdEndpoints name clusters that differ in spec.TLS (plain and TLS, or other operator Secrets): back each up with an EtcdBackup of its own',
    );
  const [operatorSecret] = secrets;
  return { urls, ...(operatorSecret !== undefined ? { operatorSecret } : {}) };
}

/** The client certificate a backup presents; a missing or unreadable Secret is the user's to fix. */
async function clientCredentials(
  client: ApiClient,
  namespace: string,
  name: string,
  field: string,
): Promise<ClientCredentials> {
  const read = await readTLSSecret(client, namespace, name, CLIENT_KEYS, field);
  if ('problem' in read) throw new InvalidSpecError(read.problem);
  return read;
}

/** The one EtcdCluster every endpoint names (disaster recovery restores only a cluster's own backups), else undefined. */
function soleCluster(namespace: string, endpoints: readonly unknown[]): string | undefined {
  const names = new Set(
    endpoints
      .map((endpoint) => clientServiceEndpoint(namespace, endpoint))
      .map((read) => ('cluster' in read ? read.cluster : '')),
  );
  const [only] = names;
  return names.size === 1 && only ? only : undefined;
}

async function ownedBy(storage: LocalStorage, names: string[], owner: string): Promise<string[]> {
  const owners = await Promise.all(names.map((name) => storage.ownerOf(name)));
  return names.filter((_, i) => owners[i] === owner);
}

function validate(spec: Partial<EtcdBackupSpec>): string | undefined {
  if (!Array.isArray(spec.etcdEndpoints) || spec.etcdEndpoints.length === 0)
    return 'spec.etcdEndpoints must list at least one etcd client URL, e.g. http://<cluster>-client:2379';
  if (
    spec.clientTLSSecret !== undefined &&
    spec.clientTLSSecret !== '' &&
    !isObjectName(spec.clientTLSSecret)
  ) {
    return `spec.clientTLSSecret must name a Secret in the backup's namespace (a DNS-1123 subdomain), got ${JSON.stringify(spec.clientTLSSecret)}`;
  }
  const policy = spec.backupPolicy ?? {};
  for (const key of ['timeoutInSecond', 'backupIntervalInSecond', 'maxBackups'] as const) {
    const value = policy[key];
    if (value !== undefined && (!Number.isInteger(value) || value < 0))
      return `spec.backupPolicy.${key} must be a whole number >= 0 (got ${JSON.stringify(value)})`;
  }
  return undefined;
}
