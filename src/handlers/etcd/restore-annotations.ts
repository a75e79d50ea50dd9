import { GROUP } from './types.js';

/** On a recreated EtcdCluster: where its seed member downloads the snapshot from. */
export const RESTORE_FROM_ANNOTATION = `${GROUP}/restore-from`;
/** On a recreated EtcdCluster: the uid of the EtcdRestore that made it, so a retried restore does not redo it. */
export const RESTORED_BY_ANNOTATION = `${GROUP}/restored-by`;
/** The init container of a restore seed Pod that downloads the backup; the backup server serves only Pods that have it. */
export const SEED_INIT_CONTAINER = 'fetch-backup';
/** On a seed member Pod: which attempt at starting the cluster it is (1, 2, ...), for the back-off between attempts. */
export const SEED_ATTEMPT_ANNOTATION = `${GROUP}/seed-attempt`;
/** Label of a restore seed Pod (`etcd_` keys are reserved: spec.pod.labels cannot set it). */
export const RESTORE_SEED_LABEL = 'etcd_restore_seed';

/**
 * Checks a `restore-from` annotation before it reaches a seed Pod's `wget`: anyone who can create an
 * EtcdCluster can set it, so only an http(s) URL of the backup server's download path is accepted
 * (a value starting with `-` would otherwise be read as a wget option). Returns why it is refused.
 */
export function restoreSourceProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `uses ${url.protocol} (only http and https)`;
  if (url.username !== '' || url.password !== '') return 'carries credentials';
  if (!/^\/v1\/backup\/[^/]+\/[^/]+$/.test(url.pathname))
    return 'is not a backup download path (/v1/backup/<namespace>/<restore>)';
  return undefined;
}
