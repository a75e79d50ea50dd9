/**
 * The `etcd.database.coreos.com/v1beta2` API, field for field as the original etcd-operator, so
 * existing manifests work. `Local` storage is ours (a directory, e.g. a PVC mounted into the operator).
 */
import type * as Crd from './generated/etcd.database.coreos.com.js';

export const GROUP = 'etcd.database.coreos.com';
export const API_VERSION = `${GROUP}/v1beta2`;

// The CRD shapes are generated from crds/etcd.database.coreos.com.yaml (`npm run types`); the
// names below keep the handlers' vocabulary. Status types add what the operator itself writes
// (condition types, phases), checked against the CRD by `extends`.
export type {
  EtcdBackup,
  EtcdBackupSpec,
  EtcdBackupStatus,
  EtcdClusterSpec,
  EtcdRestore,
  EtcdRestoreSpec,
} from './generated/etcd.database.coreos.com.js';

/** `spec.pod`: applies to members created after a change; unknown fields are kept. */
export type PodPolicy = NonNullable<Crd.EtcdClusterSpec['pod']>;

/**
 * A condition as the operator writes it: a type alias, not an interface, so it fits the CRD's
 * condition (which keeps unknown fields) where `EtcdClusterStatus` extends the generated status.
 */
export type Condition = {
  type: 'Available' | 'Recovering' | 'Scaling' | 'Upgrading' | 'Rolling' | 'Valid' | 'Quorum';
  status: 'True' | 'False' | 'Unknown';
  lastUpdateTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
};

/** `EtcdCluster.status`, as the operator writes it. */
export interface EtcdClusterStatus extends Crd.EtcdClusterStatus {
  phase?: '' | 'Creating' | 'Running' | 'Failed';
  conditions?: Condition[];
  members?: { ready: string[]; unready: string[] };
}

/** An `EtcdCluster` object, with the status the operator writes. */
export interface EtcdCluster extends Crd.EtcdCluster {
  status?: EtcdClusterStatus;
}

/** Where backups are kept. */
export type StorageType = Crd.EtcdBackupSpec['storageType'];

/** `spec.s3` of a backup or restore. `path` is `bucket/key`; `awsSecret` names a Secret with `credentials` (and optionally `config`). */
export type S3Source = NonNullable<Crd.EtcdBackupSpec['s3']>;

/** `spec.local`: a path under the operator's backup root (e.g. a PVC mount); absolute paths are taken relative to that root. */
export type LocalSource = NonNullable<Crd.EtcdBackupSpec['local']>;

/** `spec.backupPolicy` of a backup. */
export type BackupPolicy = NonNullable<Crd.EtcdBackupSpec['backupPolicy']>;

/**
 * `EtcdRestore.status`. Written by the operator while the restore runs, so a retry carries on from
 * there (see `restore-record.ts`): the download token, the storage as it was when the restore
 * started, the checked backup's size and SHA-256, and the cluster as it was before it was deleted.
 */
export interface EtcdRestoreStatus extends Crd.EtcdRestoreStatus {
  backup?: { size: number; sha256: string; location: string };
}

/** The identity of the object being handled. */
export interface ObjectRef {
  name: string;
  namespace: string;
  uid: string;
}
