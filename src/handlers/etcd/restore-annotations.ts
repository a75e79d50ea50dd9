import { GROUP } from './types.js';

/** On a recreated EtcdCluster: where its seed member downloads the snapshot from. */
export const RESTORE_FROM_ANNOTATION = `${GROUP}/restore-from`;
/** On a recreated EtcdCluster: the uid of the EtcdRestore that made it, so a retried restore does not redo it. */
export const RESTORED_BY_ANNOTATION = `${GROUP}/restored-by`;
