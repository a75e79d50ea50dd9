import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * The replica's name in the Lease. In a Pod (`POD_NAME`) it is the Pod's name: one container of a Pod
 * runs at a time, so a restarted container is the same replica and takes its Lease back at once
 * instead of waiting out the lease its predecessor held. Elsewhere it is the host name with a random
 * suffix, since two processes on one host are two replicas.
 */
export function defaultReplicaIdentity(): string {
  const pod = process.env.POD_NAME;
  return pod ? pod : `${hostname()}-${randomBytes(3).toString('hex')}`;
}
