/**
 * Disaster recovery's decisions, pure: whether an EtcdCluster opted in (`spec.restorePolicy`), since
 * when it has been without quorum, whether that is long enough, and which backup to restore. The
 * cluster controller does the I/O (see `disaster-recovery.ts`).
 */
import { restoreCondition, setCondition } from './conditions.js';
import type { RestoreSource } from './restore-record.js';
import type { Condition } from './types.js';
import { isPlainObject } from '../common/plain-object.js';

/** `spec.restorePolicy.afterQuorumLostSeconds` when absent. */
export const DEFAULT_AFTER_QUORUM_LOST_SECONDS = 60;
/** The shortest wait honoured: an election or a member's restart must never look like a disaster. */
export const MIN_AFTER_QUORUM_LOST_SECONDS = 5;
/** The longest wait honoured (also the CRD's `maximum`): one day. */
export const MAX_AFTER_QUORUM_LOST_SECONDS = 86_400;

/** `spec.restorePolicy`, read: the cluster restores itself from its newest backup once quorum has been lost this long. */
export interface RestorePolicy {
  afterQuorumLostSeconds: number;
}

/**
 * Reads `spec.restorePolicy` (tenant input). Absent or null: no disaster recovery, as the original.
 * @returns the policy, none, or the problem in words a user can act on.
 */
export function readRestorePolicy(
  value: unknown,
): { policy?: RestorePolicy } | { problem: string } {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    return {
      problem: `spec.restorePolicy must be an object such as { afterQuorumLostSeconds: 60 } (got ${JSON.stringify(value)})`,
    };
  const after =
    (value as { afterQuorumLostSeconds?: unknown }).afterQuorumLostSeconds ??
    DEFAULT_AFTER_QUORUM_LOST_SECONDS;
  if (
    typeof after !== 'number' ||
    !Number.isInteger(after) ||
    after < MIN_AFTER_QUORUM_LOST_SECONDS ||
    after > MAX_AFTER_QUORUM_LOST_SECONDS
  ) {
    return {
      problem: `spec.restorePolicy.afterQuorumLostSeconds must be a whole number of seconds from ${MIN_AFTER_QUORUM_LOST_SECONDS} to ${MAX_AFTER_QUORUM_LOST_SECONDS} (got ${JSON.stringify(after)})`,
    };
  }
  return { policy: { afterQuorumLostSeconds: after } };
}

const QUORUM_LOST = 'QuorumLost';

/**
 * The `Quorum` condition set False. Its `lastTransitionTime` is when quorum was lost: a message that
 * changes (how many members run) keeps it, so it survives operator restarts as the clock to wait on.
 */
export function quorumLost(
  conditions: readonly Condition[] | undefined,
  message: string,
  now = new Date(),
): Condition[] {
  return setCondition(
    conditions,
    { type: 'Quorum', status: 'False', reason: QUORUM_LOST, message },
    now,
  );
}

/** The `Quorum` condition back to True, only where it was False: a cluster that never lost quorum carries none. */
export function quorumKept(
  conditions: readonly Condition[] | undefined,
  now = new Date(),
): Condition[] | undefined {
  return restoreCondition(
    conditions,
    { type: 'Quorum', reason: 'QuorumRegained', message: 'a majority of members is running' },
    now,
  );
}

/**
 * Whether a lost quorum runs the recovery clock: not during an upgrade (a single member restarting on
 * its new image is briefly without quorum), nor while a member added to etcd has never started (its
 * Pod's create failed: a scale-up to finish, not a disaster to restore a backup over).
 * @param members the member list, when it could be read.
 */
export function recoveryClockRuns(
  conditions: readonly Condition[] | undefined,
  members?: readonly { name: string }[],
): boolean {
  if (conditions?.some((c) => c.type === 'Upgrading' && c.status === 'True')) return false;
  return !(members ?? []).some((m) => m.name === '');
}

/** When quorum was lost (ms since the epoch), from the `Quorum` condition; undefined while it is not lost or the time does not parse. */
export function quorumLostSince(conditions: readonly Condition[] | undefined): number | undefined {
  const quorum = conditions?.find((c) => c.type === 'Quorum');
  if (quorum?.status !== 'False') return undefined;
  const at = Date.parse(quorum.lastTransitionTime ?? '');
  return Number.isNaN(at) ? undefined : at;
}

/** How long until the cluster may be restored (0: now), or undefined when it does not restore itself. */
export function restoreDueInMs(
  policy: RestorePolicy | undefined,
  lostSince: number | undefined,
  now: number,
): number | undefined {
  if (!policy || lostSince === undefined) return undefined;
  return Math.max(0, lostSince + policy.afterQuorumLostSeconds * 1000 - now);
}

/** The parts of an EtcdBackup disaster recovery reads; all of it tenant input. */
export interface BackupObject {
  metadata?: { name?: string };
  spec?: { etcdEndpoints?: unknown; storageType?: unknown; s3?: unknown; local?: unknown };
  status?: {
    etcdRevision?: unknown;
    lastSuccessDate?: unknown;
    lastBackupPath?: unknown;
    lastBackupCluster?: unknown;
  };
}

/** A backup file to restore a cluster from, as an EtcdRestore names it. */
export interface RecoveryBackup {
  /** The EtcdBackup that wrote it. */
  backup: string;
  revision: number;
  /** `lastSuccessDate`. */
  takenAt: string;
  /** The restore's storage fields: the backup's own storage, with the file it last wrote. */
  source: RestoreSource;
}

const isText = (value: unknown): value is string => typeof value === 'string' && value !== '';

/**
 * The newest backup of `cluster` among a namespace's EtcdBackups: those whose last file holds that
 * cluster (`status.lastBackupCluster`, written with it) and that have written a file (`status.lastBackupPath`, kept when a later
 * run fails), newest `lastSuccessDate` first, then highest revision. Backups of the same name taken of
 * an earlier cluster count: a restored cluster is one.
 */
export function newestBackupOf(
  cluster: string,
  backups: readonly BackupObject[],
): RecoveryBackup | undefined {
  let newest: (RecoveryBackup & { at: number }) | undefined;
  for (const backup of backups) {
    const name = backup.metadata?.name;
    // The cluster the file holds, as recorded when it was written: the spec may name another one since.
    if (!isText(name) || backup.status?.lastBackupCluster !== cluster) continue;
    const { etcdRevision, lastSuccessDate, lastBackupPath } = backup.status;
    const at = isText(lastSuccessDate) ? Date.parse(lastSuccessDate) : NaN;
    if (
      !isText(lastBackupPath) ||
      Number.isNaN(at) ||
      typeof etcdRevision !== 'number' ||
      !Number.isSafeInteger(etcdRevision) ||
      etcdRevision < 0
    )
      continue;
    const source = sourceOf(backup.spec ?? {}, lastBackupPath);
    if (!source) continue;
    if (newest && (at < newest.at || (at === newest.at && etcdRevision <= newest.revision)))
      continue;
    newest = {
      backup: name,
      revision: etcdRevision,
      takenAt: lastSuccessDate as string,
      source,
      at,
    };
  }
  if (!newest) return undefined;
  const { at: _at, ...found } = newest;
  return found;
}

/** An EtcdBackup's storage as an EtcdRestore's fields, reading the file at `path`. */
function sourceOf(
  spec: NonNullable<BackupObject['spec']>,
  path: string,
): RestoreSource | undefined {
  if (spec.storageType === 'Local') return { backupStorageType: 'Local', local: { path } };
  if (spec.storageType !== 'S3' || !isPlainObject(spec.s3) || !isText(spec.s3.awsSecret))
    return undefined;
  const { awsSecret, endpoint, forcePathStyle } = spec.s3;
  return {
    backupStorageType: 'S3',
    s3: {
      path,
      awsSecret,
      ...(isText(endpoint) ? { endpoint } : {}),
      ...(typeof forcePathStyle === 'boolean' ? { forcePathStyle } : {}),
    },
  };
}
