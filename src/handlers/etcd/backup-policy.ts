/**
 * Limits on what an `EtcdBackup`'s `backupPolicy` may ask of the shared operator: every value is
 * tenant input, and a handler slot or the shared backup disk is everyone's.
 */

/** `timeoutInSecond` when absent or 0, as the original. */
export const DEFAULT_BACKUP_TIMEOUT_SECONDS = 60;
/** The largest `timeoutInSecond` honoured (also the CRD's `maximum`): 30 minutes. */
export const MAX_BACKUP_TIMEOUT_SECONDS = 1800;
/** Default shortest period between two backups of one periodic EtcdBackup. */
export const DEFAULT_MIN_BACKUP_INTERVAL_SECONDS = 10;
/** Overrides {@link DEFAULT_MIN_BACKUP_INTERVAL_SECONDS} (whole seconds, at least 1). */
export const MIN_BACKUP_INTERVAL_ENV = 'KONDUCTOR_MIN_BACKUP_INTERVAL_SECONDS';
/** Default most `Local` backup files one namespace may hold (its owner files and unfinished writes not counted). */
export const DEFAULT_MAX_LOCAL_BACKUPS_PER_NAMESPACE = 1000;
/** Overrides {@link DEFAULT_MAX_LOCAL_BACKUPS_PER_NAMESPACE} (a positive whole number). */
export const MAX_LOCAL_BACKUPS_ENV = 'KONDUCTOR_MAX_LOCAL_BACKUPS_PER_NAMESPACE';

const positiveInteger = (value: unknown): number | undefined => {
  const n = Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
};

/** The snapshot timeout in seconds: 60 when absent, 0 or invalid; never above {@link MAX_BACKUP_TIMEOUT_SECONDS}. */
export function backupTimeoutSeconds(timeoutInSecond: unknown): number {
  return Math.min(
    positiveInteger(timeoutInSecond) ?? DEFAULT_BACKUP_TIMEOUT_SECONDS,
    MAX_BACKUP_TIMEOUT_SECONDS,
  );
}

/** The shortest backup interval in force (`KONDUCTOR_MIN_BACKUP_INTERVAL_SECONDS`, default 10 s). */
export function minBackupIntervalSeconds(env: NodeJS.ProcessEnv = process.env): number {
  return positiveInteger(env[MIN_BACKUP_INTERVAL_ENV]) ?? DEFAULT_MIN_BACKUP_INTERVAL_SECONDS;
}

/** The period of a periodic backup: 0 (one-shot) when absent, 0 or invalid; otherwise at least the minimum. */
export function backupIntervalSeconds(
  backupIntervalInSecond: unknown,
  env: NodeJS.ProcessEnv = process.env,
): number {
  const interval = positiveInteger(backupIntervalInSecond);
  return interval === undefined ? 0 : Math.max(interval, minBackupIntervalSeconds(env));
}

/** The per-namespace cap on `Local` backup files in force. */
export function maxLocalBackupsPerNamespace(env: NodeJS.ProcessEnv = process.env): number {
  return positiveInteger(env[MAX_LOCAL_BACKUPS_ENV]) ?? DEFAULT_MAX_LOCAL_BACKUPS_PER_NAMESPACE;
}

/**
 * Why one more `Local` backup may not be written in a namespace that holds `existing` files, or
 * undefined when it may; replacing a file (a one-shot backup taken again) adds none.
 */
export function localQuotaProblem(
  namespace: string,
  existing: number,
  replacing: boolean,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const cap = maxLocalBackupsPerNamespace(env);
  if (replacing || existing < cap) return undefined;
  return `namespace ${namespace} already holds ${existing} Local backup files, the limit per namespace (${MAX_LOCAL_BACKUPS_ENV}=${cap}): lower maxBackups or delete old backups`;
}
