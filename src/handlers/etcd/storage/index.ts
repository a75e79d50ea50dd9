/** Backup storage for the etcd operator: where snapshots are written, listed, read back and pruned. */
export { BackupNotFoundError, NotOwnerError } from './backup-storage.js';
export type { BackupStorage, OwnerOption, StoredBackup } from './backup-storage.js';
export { backupsToDelete, parseBackupName, periodicBackupName } from './backup-names.js';
export type { ParsedBackupName } from './backup-names.js';
export { LocalStorage } from './local-storage.js';
export { parseAwsSecret, s3Path, S3Storage } from './s3-storage.js';
export type { AwsSecretContents, S3Credentials, S3StorageOptions } from './s3-storage.js';
