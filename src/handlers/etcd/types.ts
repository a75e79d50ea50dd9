/**
 * The `etcd.database.coreos.com/v1beta2` API, field for field as the original etcd-operator, so
 * existing manifests work. `Local` storage is ours (a directory, e.g. a PVC mounted into the operator).
 */
export const GROUP = 'etcd.database.coreos.com';
export const API_VERSION = `${GROUP}/v1beta2`;

export interface PodPolicy {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  nodeSelector?: Record<string, string>;
  resources?: Record<string, unknown>;
  tolerations?: Record<string, unknown>[];
  affinity?: Record<string, unknown>;
  etcdEnv?: { name: string; value?: string }[];
  securityContext?: Record<string, unknown>;
}

export interface EtcdClusterSpec {
  size: number;
  /** Default `quay.io/coreos/etcd`. */
  repository?: string;
  /** Default `3.4.23`; a leading `v` is ignored. */
  version?: string;
  paused?: boolean;
  pod?: PodPolicy;
}

export interface Condition {
  type: 'Available' | 'Recovering' | 'Scaling' | 'Upgrading' | 'Valid' | 'Quorum';
  status: 'True' | 'False' | 'Unknown';
  lastUpdateTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface EtcdClusterStatus {
  phase?: '' | 'Creating' | 'Running' | 'Failed';
  reason?: string;
  controlPaused?: boolean;
  conditions?: Condition[];
  size?: number;
  serviceName?: string;
  clientPort?: number;
  members?: { ready: string[]; unready: string[] };
  currentVersion?: string;
  targetVersion?: string;
}

export type StorageType = 'S3' | 'Local';

export interface S3Source {
  /** `bucket/key`. */
  path: string;
  /** A Secret with `credentials` (AWS shared-credentials file) and optionally `config`. */
  awsSecret: string;
  endpoint?: string;
  forcePathStyle?: boolean;
}

export interface LocalSource {
  /** A path under the operator's backup root (e.g. a PVC mount); absolute paths are taken relative to that root. */
  path: string;
}

export interface BackupPolicy {
  timeoutInSecond?: number;
  /** 0 or absent: one-shot. */
  backupIntervalInSecond?: number;
  /** 0 or absent: keep all. */
  maxBackups?: number;
}

export interface EtcdBackupSpec {
  etcdEndpoints: string[];
  storageType: StorageType;
  backupPolicy?: BackupPolicy;
  s3?: S3Source;
  local?: LocalSource;
}

export interface EtcdBackupStatus {
  succeeded?: boolean;
  /** Capitalised as in the original API. */
  Reason?: string;
  etcdVersion?: string;
  etcdRevision?: number;
  lastSuccessDate?: string;
  /** The object written by the last successful backup. */
  lastBackup?: string;
  backups?: number;
}

export interface EtcdRestoreSpec {
  etcdCluster: { name: string };
  backupStorageType: StorageType;
  s3?: S3Source;
  local?: LocalSource;
}

export interface EtcdRestoreStatus {
  succeeded?: boolean;
  reason?: string;
  /**
   * Written by the operator while the restore runs, so a retry carries on from there (see
   * `restore-record.ts`): the download token, the storage as it was when the restore started, the
   * checked backup's size and SHA-256, and the cluster as it was before it was deleted.
   */
  token?: string;
  source?: Record<string, unknown>;
  backup?: { size: number; sha256: string; location: string };
  cluster?: Record<string, unknown>;
}

/** The identity of the object being handled. */
export interface ObjectRef {
  name: string;
  namespace: string;
  uid: string;
}
