import { readRestorePolicy, type RestorePolicy } from './restore-policy.js';
import { readTLSPolicy, type TLSPolicy } from './tls-policy.js';
import { GROUP, type EtcdClusterSpec } from './types.js';

export const DEFAULT_REPOSITORY = 'quay.io/coreos/etcd';
/** The only etcd these machines have; the original defaulted to 3.2.13, which no one should start today. */
export const DEFAULT_VERSION = '3.4.23';
const VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const RESERVED_LABELS = /^(app|etcd_.*)$/;

/** An EtcdCluster spec with defaults applied. */
export interface ClusterSpec {
  size: number;
  repository: string;
  version: string;
  paused: boolean;
  pod: NonNullable<EtcdClusterSpec['pod']>;
  /** Disaster recovery, when opted in. */
  restorePolicy?: RestorePolicy;
  /** `spec.TLS.static`, when it names any Secret. */
  tls?: TLSPolicy;
}

/**
 * Defaults and validation. The CRD schema rejects most bad specs at the API server; this catches
 * the rest and objects stored before the schema existed (the original CRDs had none).
 * @returns the spec, or the problems in words a user can act on.
 */
export function readClusterSpec(
  spec: Partial<EtcdClusterSpec> | undefined,
): { spec: ClusterSpec } | { problems: string[] } {
  const problems: string[] = [];
  const size = spec?.size;
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 1 || size > 7) {
    problems.push(`spec.size must be an integer from 1 to 7 (got ${JSON.stringify(size)})`);
  }
  const version = String(spec?.version ?? DEFAULT_VERSION).replace(/^v/, '');
  if (!VERSION.test(version))
    problems.push(`spec.version must look like 3.4.23 (got ${JSON.stringify(spec?.version)})`);
  const repository = spec?.repository ?? DEFAULT_REPOSITORY;
  if (typeof repository !== 'string' || repository === '')
    problems.push('spec.repository must be a non-empty image repository');
  const pod = spec?.pod ?? {};
  for (const key of Object.keys(pod.labels ?? {})) {
    if (RESERVED_LABELS.test(key))
      problems.push(`spec.pod.labels.${key} is reserved for the operator's own selectors`);
  }
  if (pod.annotations && 'etcd.version' in pod.annotations)
    problems.push('spec.pod.annotations."etcd.version" is reserved: it drives upgrades');
  for (const key of Object.keys(pod.annotations ?? {})) {
    if (key.startsWith(`${GROUP}/`))
      problems.push(
        `spec.pod.annotations."${key}" is reserved: annotations under ${GROUP}/ record what the operator made each member with`,
      );
  }
  const restore = readRestorePolicy(spec?.restorePolicy);
  if ('problem' in restore) problems.push(restore.problem);
  const tls = readTLSPolicy(spec?.TLS);
  if ('problem' in tls) problems.push(tls.problem);
  if (problems.length > 0 || 'problem' in restore || 'problem' in tls) return { problems };
  return {
    spec: {
      size: size as number,
      repository,
      version,
      paused: spec?.paused === true,
      pod,
      ...(restore.policy ? { restorePolicy: restore.policy } : {}),
      ...(tls.policy ? { tls: tls.policy } : {}),
    },
  };
}

/** Votes needed for quorum among `members` members. */
export function quorum(members: number): number {
  return Math.floor(members / 2) + 1;
}
