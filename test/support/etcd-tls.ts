import { webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';
import type { ApiClient } from '../../src/framework/index.js';
import {
  issueAuthority,
  issueClientCertificate,
} from '../../src/framework/admission/certificates.js';

/**
 * Certificates for an EtcdCluster with `spec.TLS.static`, laid out as etcd-operator's TLS guide lays
 * them out: one CA; a peer certificate and a server certificate for `*.<cluster>.<namespace>.svc`
 * (both also serve as clients: members dial each other, and etcd's gateway dials itself); the
 * operator's client certificate. Specs and node specs create them as the three Secrets.
 */

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

/** PEM strings. */
export interface Pem {
  cert: string;
  key: string;
}

/** What {@link issueEtcdTLS} makes. */
export interface EtcdTLS {
  ca: Pem;
  peer: Pem;
  server: Pem;
  client: Pem;
}

/** The Secret names of etcd-operator's TLS example. */
export const TLS_SECRETS = {
  peer: 'etcd-peer-tls',
  server: 'etcd-server-tls',
  operator: 'etcd-client-tls',
} as const;

/** `spec.TLS` naming {@link TLS_SECRETS}. */
export const TLS_SPEC = {
  static: {
    member: { peerSecret: TLS_SECRETS.peer, serverSecret: TLS_SECRETS.server },
    operatorSecret: TLS_SECRETS.operator,
  },
};

/** A CA (the framework's webhook CA: the same ECDSA P-256 authority). */
export function issueCA(commonName = 'etcd test CA'): Promise<Pem> {
  return issueAuthority({ commonName, now: Date.now(), validityMs: DAY_MS });
}

/**
 * A leaf certificate signed by `ca`, for `hosts` (DNS names, wildcards, IP addresses), good for
 * serving and as a client: what etcd's peer and server certificates must be (members dial each
 * other, and etcd's gateway dials its own server), which the framework's serving certificates are not.
 */
export async function issueLeaf(
  ca: Pem,
  commonName: string,
  hosts: readonly string[],
): Promise<Pem> {
  const issuer = new x509.X509Certificate(ca.cert);
  const signingKey = await webcrypto.subtle.importKey('pkcs8', pemBody(ca.key), ALGORITHM, false, [
    'sign',
  ]);
  const keys = await generate();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${commonName}`,
    issuer: issuer.subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + DAY_MS),
    publicKey: keys.publicKey,
    signingKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.serverAuth,
        x509.ExtendedKeyUsage.clientAuth,
      ]),
      ...(hosts.length > 0
        ? [
            new x509.SubjectAlternativeNameExtension(
              hosts.map((host) => ({
                type: isIP(host) ? ('ip' as const) : ('dns' as const),
                value: host,
              })),
            ),
          ]
        : []),
    ],
  });
  return { cert: cert.toString('pem'), key: await keyPem(keys.privateKey) };
}

/**
 * A CA and the certificates of a TLS cluster named `cluster` in `namespace`. The peer and server
 * certificates name every member (`*.<cluster>.<namespace>.svc`), the client Service, `localhost`
 * (the readiness probe dials it) and `127.0.0.1` (the simulated kubelet's members listen there).
 */
export async function issueEtcdTLS(namespace: string, cluster: string, ca?: Pem): Promise<EtcdTLS> {
  const authority = ca ?? (await issueCA());
  const members = [`*.${cluster}.${namespace}.svc`, `*.${cluster}.${namespace}.svc.cluster.local`];
  const hosts = [
    ...members,
    `${cluster}-client.${namespace}.svc`,
    `${cluster}-client`,
    'localhost',
    '127.0.0.1',
  ];
  return {
    ca: authority,
    peer: await issueLeaf(authority, `${cluster} peer`, hosts),
    server: await issueLeaf(authority, `${cluster} server`, hosts),
    client: await issueClientCertificate(authority, {
      commonName: 'etcd operator',
      now: Date.now(),
      validityMs: DAY_MS,
    }),
  };
}

/** The three Secrets of etcd-operator's TLS example, with upstream's key names. */
export function tlsSecrets(tls: EtcdTLS): { name: string; data: Record<string, string> }[] {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  return [
    {
      name: TLS_SECRETS.peer,
      data: {
        'peer-ca.crt': b64(tls.ca.cert),
        'peer.crt': b64(tls.peer.cert),
        'peer.key': b64(tls.peer.key),
      },
    },
    {
      name: TLS_SECRETS.server,
      data: {
        'server-ca.crt': b64(tls.ca.cert),
        'server.crt': b64(tls.server.cert),
        'server.key': b64(tls.server.key),
      },
    },
    {
      name: TLS_SECRETS.operator,
      data: {
        'etcd-client-ca.crt': b64(tls.ca.cert),
        'etcd-client.crt': b64(tls.client.cert),
        'etcd-client.key': b64(tls.client.key),
      },
    },
  ];
}

/** Creates (or replaces) the three Secrets in `namespace`. */
export async function applyTLSSecrets(
  api: ApiClient,
  namespace: string,
  tls: EtcdTLS,
): Promise<void> {
  const secrets = api.resource<{
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace: string };
    data: Record<string, string>;
  }>('v1', 'secrets');
  for (const { name, data } of tlsSecrets(tls)) {
    const body = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, data };
    if (await secrets.find({ namespace, name }))
      await secrets.patch({ namespace, name }, { data }, { type: 'merge' });
    else await secrets.create(body);
  }
}

function generate(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, [
    'sign',
    'verify',
  ]) as Promise<webcrypto.CryptoKeyPair>;
}

async function keyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
}

function pemBody(pem: string): ArrayBuffer {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  return der.buffer.slice(der.byteOffset, der.byteOffset + der.byteLength) as ArrayBuffer;
}

function serial(): string {
  return Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
    .toString('hex')
    .replace(/^[89a-f]/, '1');
}
