import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { ApiError, type ApiClient, type KubeObject } from 'konductor';
import { CLIENT_KEYS, PEER_KEYS, SERVER_KEYS, type TLSPolicy } from './tls-policy.js';

/** A client certificate, its key and the CA that signed the members' server certificates, as PEM. */
export interface ClientCredentials {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/** What a cluster's TLS Secrets hold, once checked. */
export interface ClusterTLS {
  /** The operator's client certificate; undefined when clients talk plain HTTP. */
  credentials?: ClientCredentials;
  /**
   * SHA-256 over the Secrets' names and the certificates and keys member Pods mount: a member whose
   * Pod records another digest runs with older certificates and is rolled.
   */
  digest: string;
}

type Secret = KubeObject & { data?: Record<string, string> };
type Keys = { ca: string; cert: string; key: string };

/**
 * Reads and checks a cluster's TLS Secrets (all in `namespace`: a tenant's cluster never mounts or
 * reads another namespace's). Each must exist and hold its three keys: a PEM certificate, a PEM CA
 * bundle and the certificate's private key.
 * @returns the checked material, or the problem naming the Secret, the key and what to do.
 */
export async function readClusterTLS(
  client: ApiClient,
  namespace: string,
  policy: TLSPolicy,
): Promise<ClusterTLS | { problem: string }> {
  const hash = createHash('sha256');
  const read: Partial<Record<'peer' | 'server' | 'client', ClientCredentials & { where: string }>> =
    {};
  const parts: ['peer' | 'server' | 'client', string | undefined, Keys, string][] = [
    ['peer', policy.peerSecret, PEER_KEYS, 'spec.TLS.static.member.peerSecret'],
    ['server', policy.serverSecret, SERVER_KEYS, 'spec.TLS.static.member.serverSecret'],
    ['client', policy.operatorSecret, CLIENT_KEYS, 'spec.TLS.static.operatorSecret'],
  ];
  for (const [role, name, keys, field] of parts) {
    if (name === undefined) continue;
    const secret = await readTLSSecret(client, namespace, name, keys, field);
    if ('problem' in secret) return secret;
    hash.update(`${field}=${name}\n`);
    for (const part of [secret.ca, secret.cert, secret.key])
      hash.update(createHash('sha256').update(part).digest());
    read[role] = { ...secret, where: `Secret ${namespace}/${name} (${field})` };
  }
  const problem = trustProblem(read);
  if (problem) return { problem };
  const credentials = read.client
    ? { ca: read.client.ca, cert: read.client.cert, key: read.client.key }
    : undefined;
  return { ...(credentials ? { credentials } : {}), digest: hash.digest('hex').slice(0, 32) };
}

/**
 * Whether the certificates would work together, checked before any member uses them (a member that
 * cannot be reached looks like a lost one): each is signed by a CA its peers trust (peers by the
 * peer CA; the server by the CA the operator trusts; the operator's client certificate by the CA
 * members trust for clients), and the server certificate names `localhost`, which the readiness
 * probe dials.
 */
function trustProblem(
  read: Partial<Record<'peer' | 'server' | 'client', ClientCredentials & { where: string }>>,
): string | undefined {
  const { peer, server, client } = read;
  if (peer && !signedByAny(peer.cert, peer.ca))
    return `${peer.where}: ${PEER_KEYS.cert} is not signed by a CA in ${PEER_KEYS.ca}, so members would refuse each other`;
  if (server && client) {
    if (!signedByAny(server.cert, client.ca))
      return `${server.where}: ${SERVER_KEYS.cert} is not signed by a CA in the operator Secret's ${CLIENT_KEYS.ca}, so the operator could not trust the members`;
    if (!signedByAny(client.cert, server.ca))
      return `${client.where}: ${CLIENT_KEYS.cert} is not signed by a CA in the server Secret's ${SERVER_KEYS.ca}, so members would refuse the operator and its probes`;
    if (new X509Certificate(server.cert).checkHost('localhost') === undefined)
      return `${server.where}: ${SERVER_KEYS.cert} does not name localhost, which the members' readiness probe dials`;
  }
  return undefined;
}

/** Whether `cert` (PEM) is signed by one of the CAs in `bundle` (PEM, one or more certificates). */
function signedByAny(cert: Buffer, bundle: Buffer): boolean {
  const leaf = new X509Certificate(cert);
  const authorities = [
    ...bundle
      .toString('utf8')
      .matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g),
  ];
  return authorities.some(([pem]) => {
    const authority = new X509Certificate(pem);
    return leaf.checkIssued(authority) && leaf.verify(authority.publicKey);
  });
}

/**
 * Reads one Secret with a CA bundle, a certificate and its key (`keys` names them), checked: each
 * present, the certificate and CA readable, the key the certificate's.
 * @param field the spec field that named the Secret, for the message.
 */
export async function readTLSSecret(
  client: ApiClient,
  namespace: string,
  name: string,
  keys: Keys,
  field: string,
): Promise<ClientCredentials | { problem: string }> {
  const where = `Secret ${namespace}/${name} (${field})`;
  let secret: Secret;
  try {
    secret = await client.resource<Secret>('v1', 'secrets').get({ namespace, name });
  } catch (error) {
    if (ApiError.isNotFound(error))
      return {
        problem: `${where} does not exist: create it with the keys ${Object.values(keys).join(', ')}`,
      };
    throw error;
  }
  const data = secret.data ?? {};
  const missing = Object.values(keys).filter(
    (key) => typeof data[key] !== 'string' || data[key] === '',
  );
  if (missing.length > 0)
    return {
      problem: `${where} lacks ${missing.join(', ')}: it needs ${Object.values(keys).join(', ')}`,
    };
  const [ca, cert, key] = [keys.ca, keys.cert, keys.key].map((k) =>
    Buffer.from(data[k]!, 'base64'),
  );
  const problem = pemProblem(ca!, cert!, key!);
  if (problem)
    return {
      problem: `${where}: ${problem.replace(/^(ca|cert|key)\b/, (part) => keys[part as keyof Keys])}`,
    };
  return { ca: ca!, cert: cert!, key: key! };
}

/** Why the three PEM parts do not fit together, naming the part (`ca`, `cert`, `key`); undefined when they do. */
function pemProblem(ca: Buffer, cert: Buffer, key: Buffer): string | undefined {
  try {
    new X509Certificate(ca);
  } catch {
    return 'ca is not a PEM certificate';
  }
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    return 'cert is not a PEM certificate';
  }
  try {
    if (!certificate.checkPrivateKey(createPrivateKey(key)))
      return 'key is not the private key of the certificate';
  } catch {
    return 'key is not a PEM private key';
  }
  return undefined;
}

/**
 * How long TLS Secrets read once are used before they are read again: a certificate change rolls
 * out within this (plus one look), and a settled cluster costs no Secret reads per look.
 */
export const TLS_REFRESH_MS = 30_000;

/** One cluster's TLS material as last read, read again when the spec names other Secrets or after {@link TLS_REFRESH_MS}. */
export class ClusterTLSCache {
  private last: { read: ClusterTLS; at: number; of: string } | undefined;

  /** @param refreshMs how long a read is used before reading again; default {@link TLS_REFRESH_MS}. */
  constructor(
    private readonly client: ApiClient,
    private readonly refreshMs = TLS_REFRESH_MS,
  ) {}

  /** The material read last; undefined for a cluster without TLS or whose Secrets are not usable. */
  get current(): ClusterTLS | undefined {
    return this.last?.read;
  }

  /**
   * Reads the Secrets `policy` names when due; forgets them when it names none.
   * @returns the problem with them, or undefined.
   */
  async refresh(namespace: string, policy: TLSPolicy | undefined): Promise<string | undefined> {
    if (!policy) {
      this.last = undefined;
      return undefined;
    }
    const of = JSON.stringify(policy);
    if (this.last && this.last.of === of && Date.now() - this.last.at < this.refreshMs)
      return undefined;
    const read = await readClusterTLS(this.client, namespace, policy);
    this.last = 'problem' in read ? undefined : { read, at: Date.now(), of };
    return 'problem' in read ? read.problem : undefined;
  }
}
