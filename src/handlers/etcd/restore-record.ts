import type { KubeObject } from 'konductor';
import { isObjectName } from './object-names.js';
import type { SnapshotFingerprint } from './snapshot-trailer.js';
import type { LocalSource, S3Source, StorageType } from './types.js';
import { isPlainObject } from '../common/plain-object.js';

/** The storage an EtcdRestore reads, fixed when the restore starts: later spec edits change nothing. */
export interface RestoreSource {
  backupStorageType: StorageType;
  s3?: S3Source;
  local?: LocalSource;
}

/** The cluster as it was before the restore deleted it: enough to create it again. */
export interface RecordedCluster {
  uid: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Record<string, unknown>[];
  spec: Record<string, unknown>;
}

/**
 * What an EtcdRestore's status records while it runs, so that any retry (after an API error, a slow
 * deletion or an operator restart) carries on from there and never depends on the old cluster
 * still existing. Status is only written by the operator, but it is read back as untrusted input:
 * {@link readRestoreRecord} drops every field that does not have the expected shape.
 */
export interface RestoreRecord {
  /** Random, 256 bits, hex: the seed's download URL must carry it. */
  token?: string;
  source?: RestoreSource;
  /** The checked backup: size, SHA-256 trailer and where it is. */
  backup?: SnapshotFingerprint & { location: string };
  cluster?: RecordedCluster;
}

const HEX64 = /^[0-9a-f]{64}$/;

const isString = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
const stringMap = (value: unknown): Record<string, string> | undefined =>
  isPlainObject(value) && Object.values(value).every((v) => typeof v === 'string')
    ? (value as Record<string, string>)
    : undefined;

/** The storage fields of a restore spec, and nothing else. Undefined when the type is unknown. */
export function restoreSource(
  spec: { backupStorageType?: unknown; s3?: unknown; local?: unknown } | undefined,
): RestoreSource | undefined {
  const type = spec?.backupStorageType;
  if (type === 'Local') {
    const local =
      isPlainObject(spec?.local) && isString(spec.local.path)
        ? { path: spec.local.path }
        : undefined;
    return local ? { backupStorageType: 'Local', local } : { backupStorageType: 'Local' };
  }
  if (type === 'S3') {
    const s3 = isPlainObject(spec?.s3) ? spec.s3 : undefined;
    if (!s3 || !isString(s3.path) || !isString(s3.awsSecret)) return { backupStorageType: 'S3' };
    return {
      backupStorageType: 'S3',
      s3: {
        path: s3.path,
        awsSecret: s3.awsSecret,
        ...(isString(s3.endpoint) ? { endpoint: s3.endpoint } : {}),
        ...(typeof s3.forcePathStyle === 'boolean' ? { forcePathStyle: s3.forcePathStyle } : {}),
      },
    };
  }
  return undefined;
}

/** The record in an EtcdRestore's status, each part only when well-formed. */
export function readRestoreRecord(status: unknown): RestoreRecord {
  if (!isPlainObject(status)) return {};
  const record: RestoreRecord = {};
  if (typeof status.token === 'string' && HEX64.test(status.token)) record.token = status.token;
  if (isPlainObject(status.source)) record.source = restoreSource(status.source);
  const backup = status.backup;
  if (
    isPlainObject(backup) &&
    Number.isSafeInteger(backup.size) &&
    (backup.size as number) > 0 &&
    typeof backup.sha256 === 'string' &&
    HEX64.test(backup.sha256) &&
    typeof backup.location === 'string'
  ) {
    record.backup = {
      size: backup.size as number,
      sha256: backup.sha256,
      location: backup.location,
    };
  }
  const cluster = status.cluster;
  if (isPlainObject(cluster) && isString(cluster.uid) && isPlainObject(cluster.spec)) {
    const owners =
      Array.isArray(cluster.ownerReferences) && cluster.ownerReferences.every(isPlainObject)
        ? (cluster.ownerReferences as Record<string, unknown>[])
        : undefined;
    const labels = stringMap(cluster.labels);
    const annotations = stringMap(cluster.annotations);
    record.cluster = {
      uid: cluster.uid,
      spec: cluster.spec,
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
      ...(owners ? { ownerReferences: owners } : {}),
    };
  }
  return record;
}

/** Why an EtcdRestore cannot run as written; undefined when it can. Upstream requires the restore to be named after its cluster. */
export function restoreSpecProblem(
  restoreName: string,
  spec: { etcdCluster?: { name?: unknown } } | undefined,
): string | undefined {
  const cluster = spec?.etcdCluster?.name;
  if (!isObjectName(cluster))
    return `spec.etcdCluster.name must be the name of an EtcdCluster in this namespace (a DNS-1123 name), got ${JSON.stringify(cluster)}`;
  if (cluster !== restoreName)
    return `spec.etcdCluster.name (${cluster}) must equal the EtcdRestore's own name (${restoreName}): name the EtcdRestore after the cluster it restores`;
  return undefined;
}

/**
 * The parts of a cluster a restore keeps: not the annotations of an earlier restore (`drop`), nor
 * any Konductor operator's bookkeeping, which belongs to the old object: the default identity's
 * (`konductor.dev/...`), and that of any prefix marked `<prefix>/konductor-managed` (whatever
 * identity this operator runs with).
 */
export function recordCluster(
  cluster: KubeObject & { spec?: Record<string, unknown> },
  drop: readonly string[],
): RecordedCluster {
  const meta = cluster.metadata ?? {};
  const all = meta.annotations ?? {};
  const annotations = Object.fromEntries(
    Object.entries(all).filter(([key]) => !drop.includes(key) && !isBookkeeping(key, all)),
  );
  const owners = Array.isArray(meta.ownerReferences)
    ? meta.ownerReferences.filter(isPlainObject)
    : [];
  return {
    uid: meta.uid ?? '',
    spec: cluster.spec ?? {},
    ...(meta.labels ? { labels: meta.labels } : {}),
    ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    ...(owners.length > 0 ? { ownerReferences: owners } : {}),
  };
}

/**
 * Why a restore cannot go on: the spec is checked only before anything is recorded; once the record
 * holds the storage and token, retries act on the record and a later edit of the spec is ignored.
 */
export function startProblem(
  restoreName: string,
  spec: { etcdCluster?: { name?: unknown } } | undefined,
  record: RestoreRecord,
): string | undefined {
  if (record.source && record.token) return undefined;
  return restoreSpecProblem(restoreName, spec);
}

/** Whether an annotation is a Konductor operator's bookkeeping (as the framework's essence tells it). */
function isBookkeeping(key: string, annotations: Readonly<Record<string, string>>): boolean {
  const slash = key.indexOf('/');
  if (slash <= 0) return false;
  const prefix = key.slice(0, slash);
  return prefix === 'konductor.dev' || Object.hasOwn(annotations, `${prefix}/konductor-managed`);
}
