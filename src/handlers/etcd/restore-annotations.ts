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
