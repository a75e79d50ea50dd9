import { isObjectName } from './object-names.js';
import type { MemberURLs } from './addresses.js';

/**
 * `spec.TLS.static` of an EtcdCluster, as upstream's etcd-operator reads it: the names of Secrets in
 * the cluster's namespace. Secure peers ⇔ `peerSecret`; secure clients ⇔ `serverSecret`, which
 * comes with `operatorSecret` (the client certificate the operator, backups and readiness probes
 * present, since members then ask every client for one).
 */
export interface TLSPolicy {
  peerSecret?: string;
  serverSecret?: string;
  operatorSecret?: string;
}

/** The keys each Secret must hold (upstream's names). */
export const PEER_KEYS = { ca: 'peer-ca.crt', cert: 'peer.crt', key: 'peer.key' } as const;
export const SERVER_KEYS = { ca: 'server-ca.crt', cert: 'server.crt', key: 'server.key' } as const;
export const CLIENT_KEYS = {
  ca: 'etcd-client-ca.crt',
  cert: 'etcd-client.crt',
  key: 'etcd-client.key',
} as const;

/** Where member Pods mount the Secrets (upstream's paths, so existing certificates and probes fit). */
export const PEER_TLS_DIR = '/etc/etcdtls/member/peer-tls';
export const SERVER_TLS_DIR = '/etc/etcdtls/member/server-tls';
export const OPERATOR_TLS_DIR = '/etc/etcdtls/operator/etcd-tls';

/**
 * Reads `spec.TLS` (untrusted). Absent, `null` or naming no Secret: no TLS.
 * @returns the policy (undefined for none), or the problem in words a user can act on.
 */
export function readTLSPolicy(value: unknown): { policy?: TLSPolicy } | { problem: string } {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    return { problem: 'spec.TLS must be an object with a static block' };
  const staticBlock = (value as { static?: unknown }).static;
  if (staticBlock === undefined || staticBlock === null) return {};
  if (typeof staticBlock !== 'object' || Array.isArray(staticBlock))
    return { problem: 'spec.TLS.static must be an object' };
  const member = (staticBlock as { member?: unknown }).member ?? {};
  if (typeof member !== 'object' || member === null || Array.isArray(member))
    return { problem: 'spec.TLS.static.member must be an object' };
  const names: [keyof TLSPolicy, string, unknown][] = [
    [
      'peerSecret',
      'spec.TLS.static.member.peerSecret',
      (member as { peerSecret?: unknown }).peerSecret,
    ],
    [
      'serverSecret',
      'spec.TLS.static.member.serverSecret',
      (member as { serverSecret?: unknown }).serverSecret,
    ],
    [
      'operatorSecret',
      'spec.TLS.static.operatorSecret',
      (staticBlock as { operatorSecret?: unknown }).operatorSecret,
    ],
  ];
  const policy: TLSPolicy = {};
  for (const [key, path, name] of names) {
    if (name === undefined || name === null || name === '') continue;
    if (!isObjectName(name))
      return {
        problem: `${path} must name a Secret in the cluster's namespace (a DNS-1123 subdomain), got ${JSON.stringify(name)}`,
      };
    policy[key] = name;
  }
  if ((policy.serverSecret === undefined) !== (policy.operatorSecret === undefined)) {
    return {
      problem:
        'spec.TLS.static.member.serverSecret and spec.TLS.static.operatorSecret must be set together: members that serve clients over TLS ask the operator for its client certificate',
    };
  }
  return Object.keys(policy).length === 0 ? {} : { policy };
}

/** The URLs with `https` where the policy secures them: peer URLs with a peer Secret, client URLs with a server Secret. */
export function securedURLs(urls: MemberURLs, tls: TLSPolicy | undefined): MemberURLs {
  const peer = tls?.peerSecret !== undefined;
  const client = tls?.serverSecret !== undefined;
  return {
    peerURL: peer ? https(urls.peerURL) : urls.peerURL,
    listenPeerURL: peer ? https(urls.listenPeerURL) : urls.listenPeerURL,
    clientURL: client ? https(urls.clientURL) : urls.clientURL,
    listenClientURL: client ? https(urls.listenClientURL) : urls.listenClientURL,
  };
}

/** `url` with the `https` scheme. */
export function https(url: string): string {
  return url.replace(/^http:\/\//, 'https://');
}

/** A Secret a member Pod mounts: its volume name, mount path and the only keys it takes from it. */
export interface SecretMount {
  volume: string;
  secret: string;
  mountPath: string;
  keys: readonly string[];
}

/** The Secrets a member Pod mounts; only the three keys each needs, whatever else the Secret holds. */
export function memberSecretMounts(tls: TLSPolicy | undefined): SecretMount[] {
  const mounts: SecretMount[] = [];
  if (tls?.peerSecret)
    mounts.push({
      volume: 'member-peer-tls',
      secret: tls.peerSecret,
      mountPath: PEER_TLS_DIR,
      keys: Object.values(PEER_KEYS),
    });
  if (tls?.serverSecret)
    mounts.push({
      volume: 'member-server-tls',
      secret: tls.serverSecret,
      mountPath: SERVER_TLS_DIR,
      keys: Object.values(SERVER_KEYS),
    });
  if (tls?.operatorSecret)
    mounts.push({
      volume: 'etcd-client-tls',
      secret: tls.operatorSecret,
      mountPath: OPERATOR_TLS_DIR,
      keys: Object.values(CLIENT_KEYS),
    });
  return mounts;
}

/** etcd's TLS flags for the policy (upstream's): peers and clients must present a certificate the CA signed. */
export function memberTLSFlags(tls: TLSPolicy | undefined): string[] {
  const flags: string[] = [];
  if (tls?.peerSecret) {
    flags.push(
      '--peer-client-cert-auth=true',
      `--peer-trusted-ca-file=${PEER_TLS_DIR}/${PEER_KEYS.ca}`,
      `--peer-cert-file=${PEER_TLS_DIR}/${PEER_KEYS.cert}`,
      `--peer-key-file=${PEER_TLS_DIR}/${PEER_KEYS.key}`,
    );
  }
  if (tls?.serverSecret) {
    flags.push(
      '--client-cert-auth=true',
      `--trusted-ca-file=${SERVER_TLS_DIR}/${SERVER_KEYS.ca}`,
      `--cert-file=${SERVER_TLS_DIR}/${SERVER_KEYS.cert}`,
      `--key-file=${SERVER_TLS_DIR}/${SERVER_KEYS.key}`,
    );
  }
  return flags;
}

/**
 * The readiness probe's command: `etcdctl endpoint status` against the member itself, with the
 * operator's client certificate when clients need one (the server certificate must then name
 * `localhost`, as upstream's does).
 */
export function readinessCommand(tls: TLSPolicy | undefined): string[] {
  if (!tls?.serverSecret) return ['/bin/sh', '-ec', 'ETCDCTL_API=3 etcdctl endpoint status'];
  const dir = OPERATOR_TLS_DIR;
  return [
    '/bin/sh',
    '-ec',
    `ETCDCTL_API=3 etcdctl --endpoints=https://localhost:2379 --cert=${dir}/${CLIENT_KEYS.cert} --key=${dir}/${CLIENT_KEYS.key} --cacert=${dir}/${CLIENT_KEYS.ca} endpoint status`,
  ];
}

/** The mode of a cluster without TLS. */
export const NO_TLS = 'none';

/**
 * Which sides talk TLS (`peer`, `server`, `peer,server`; {@link NO_TLS}). A running cluster keeps
 * its mode: members that talk plain HTTP and members that talk TLS cannot reach each other.
 */
export function tlsMode(tls: TLSPolicy | undefined): string {
  return (
    [tls?.peerSecret ? 'peer' : '', tls?.serverSecret ? 'server' : ''].filter(Boolean).join(',') ||
    NO_TLS
  );
}

/** Why a cluster whose members run in `running` mode cannot move to `wanted`; undefined when they agree. */
export function tlsModeChangeProblem(running: string, wanted: string): string | undefined {
  if (running === wanted) return undefined;
  const describe = (mode: string): string =>
    mode === NO_TLS ? 'no TLS' : `TLS for ${mode.replace(',', ' and ')}`;
  return `spec.TLS asks for ${describe(wanted)} but the members run with ${describe(running)}; a running cluster cannot change this (plain and TLS members cannot reach each other). Set spec.TLS back, or restore a backup into a new cluster with the TLS you want`;
}
