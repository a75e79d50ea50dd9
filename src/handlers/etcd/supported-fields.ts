/**
 * Which fields of an etcd.database.coreos.com/v1beta2 object the operator keeps but does not act on.
 *
 * The CRDs (crds/etcd.database.coreos.com.yaml) accept every field of coreos/etcd-operator's API: the
 * ones the operator acts on are typed there, and each spec (and its nested blocks) keeps all others as
 * written. {@link SUPPORTED_FIELDS} mirrors that schema; a spec checks that the two agree.
 */

import {
  describeIgnoredFields,
  findIgnoredFields,
  type Supported,
} from '../common/ignored-fields.js';

export { IGNORED_FIELDS_REASON, type Supported } from '../common/ignored-fields.js';

/** The kinds whose specs {@link ignoredFields} checks. */
export type EtcdKind = 'EtcdCluster' | 'EtcdBackup' | 'EtcdRestore';

const s3 = { path: true, awsSecret: true, endpoint: true, forcePathStyle: true } as const;
const local = { path: true } as const;

/** Per kind, the `spec` fields the operator acts on (see {@link Supported}). */
export const SUPPORTED_FIELDS: Readonly<Record<EtcdKind, Supported>> = {
  EtcdCluster: {
    size: true,
    repository: true,
    version: true,
    paused: true,
    restorePolicy: true,
    TLS: { static: { member: { peerSecret: true, serverSecret: true }, operatorSecret: true } },
    pod: {
      labels: true,
      annotations: true,
      nodeSelector: true,
      resources: true,
      tolerations: true,
      affinity: true,
      etcdEnv: true,
      securityContext: true,
    },
  },
  EtcdBackup: {
    etcdEndpoints: true,
    clientTLSSecret: true,
    storageType: true,
    backupPolicy: { timeoutInSecond: true, backupIntervalInSecond: true, maxBackups: true },
    s3,
    local,
  },
  EtcdRestore: {
    etcdCluster: true,
    backupStorageType: true,
    s3,
    local,
  },
};

/**
 * Ignored fields set to the value upstream defaults to, which is also what this operator does: not
 * worth a warning. Keyed by path with list indices as `[]`.
 */
const HARMLESS: Readonly<Record<EtcdKind, Readonly<Record<string, unknown>>>> = {
  EtcdCluster: { 'spec.pod.antiAffinity': false },
  EtcdBackup: {},
  EtcdRestore: {},
};

/** What an ignored field means for the user, where that is not obvious. */
const CONSEQUENCES: Readonly<Record<string, string>> = {
  'spec.pod.antiAffinity': 'use spec.pod.affinity',
  'spec.pod.persistentVolumeClaimSpec': 'member data is on an emptyDir volume',
};

/**
 * The paths (`spec.pod.antiAffinity`, `spec.pod.persistentVolumeClaimSpec`) of the fields `spec` sets that the operator keeps
 * but does not act on, in the order they appear; empty when there are none. Fields that are unset in
 * upstream's sense (null, `""`, `[]`) and ignored fields set to upstream's default where the operator
 * behaves the same are not listed. Pure; `spec` is untrusted.
 */
export function ignoredFields(kind: EtcdKind, spec: unknown): string[] {
  return findIgnoredFields(spec, SUPPORTED_FIELDS[kind], HARMLESS[kind]);
}

/** The Event message naming `paths` (from {@link ignoredFields}), what they mean, and what to do about them. */
export function ignoredFieldsMessage(
  kind: EtcdKind,
  paths: readonly string[],
  generation?: number,
): string {
  return describeIgnoredFields(paths, { kind, generation, consequences: CONSEQUENCES });
}
