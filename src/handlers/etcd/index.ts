/** The etcd operator as handler modules (public framework API only). */
export { EtcdClusters, type EtcdClustersOptions } from './clusters.js';
export { EtcdBackups, DEFAULT_BACKUP_ROOT, type EtcdBackupsOptions } from './backups.js';
export { EtcdRestores, type EtcdRestoresOptions } from './restores.js';
export { ClusterDnsAddresses, type EtcdAddresses, type MemberURLs } from './addresses.js';
export { RESTORE_FROM_ANNOTATION, RESTORED_BY_ANNOTATION } from './restore-annotations.js';
export { EtcdIgnoredFields } from './ignored-fields-reporter.js';
export {
  IGNORED_FIELDS_REASON,
  SUPPORTED_FIELDS,
  ignoredFields,
  ignoredFieldsMessage,
  type EtcdKind,
} from './supported-fields.js';
export * from './types.js';
export { EtcdAdmission, versionChangeProblem } from './admission.js';
