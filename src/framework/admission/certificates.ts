import {
  createPrivateKey,
  randomBytes,
  webcrypto,
  X509Certificate as NodeCertificate,
} from 'node:crypto';
import { isIP } from 'node:net';
import type * as X509 from '@peculiar/x509';

/**
 * Webhook certificates: a private CA and a serving certificate it signs, made with `@peculiar/x509`
 * on node's WebCrypto (ECDSA P-256: small keys, fast to make). Pure apart from randomness: the
 * time is always given, so a rotation plan can be tested at any instant.
 */

let x509Module: Promise<typeof X509> | undefined;

/**
 * `@peculiar/x509`, loaded on first use: with its ASN.1 stack it is about 15 MB of memory, which an
 * operator that serves no webhooks (or brings its own certificates) never needs.
 */
function loadX509(): Promise<typeof X509> {
  return (x509Module ??= import('@peculiar/x509').then((x509) => {
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
    return x509;
  }));
}

/** A certificate and its private key, both PEM (the key PKCS#8). */
export interface IssuedCertificate {
  cert: string;
  key: string;
}

/** What the framework needs to know of a certificate. */
export interface CertificateInfo {
  notBefore: Date;
  notAfter: Date;
  /** SHA-256 fingerprint, `AB:CD:…`. */
  fingerprint: string;
  isCa: boolean;
}

/** Options for {@link issueAuthority}. */
export interface AuthorityOptions {
  commonName: string;
  /** Epoch milliseconds the certificate is issued at. */
  now: number;
  validityMs: number;
}

/** Options for {@link issueServingCertificate}. */
export interface ServingOptions {
  /** DNS names (`svc.ns.svc`, `*.example.com`) and IP addresses (`127.0.0.1`, `::1`) for the SAN. */
  hosts: readonly string[];
  now: number;
  /** Capped at the authority's own expiry: a certificate must not outlive its issuer. */
  validityMs: number;
}

/** Options for {@link issueClientCertificate}. */
export interface ClientOptions {
  /** The subject's common name: the user name an API server would see. */
  commonName: string;
  now: number;
  /** Capped at the authority's own expiry. */
  validityMs: number;
}

/** How far back `notBefore` is set, so a peer whose clock runs a little behind accepts a fresh certificate. */
export const CLOCK_SKEW_MS = 60_000;

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DNS_NAME =
  /^(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

/**
 * A self-signed CA: basicConstraints cA (critical, path length 0), keyCertSign and cRLSign.
 *
 * @example
 * ```ts
 * const ca = await issueAuthority({ commonName: 'my-operator webhook CA', now: Date.now(), validityMs: 365 * 86_400_000 });
 * ```
 */
export async function issueAuthority(options: AuthorityOptions): Promise<IssuedCertificate> {
  checkValidity(options.validityMs, 'CA');
  const commonName = options.commonName.trim().slice(0, 64);
  if (commonName === '') throw new Error('issueAuthority: commonName must not be empty');
  const x509 = await loadX509();
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: [{ CN: [commonName] }],
    notBefore: new Date(options.now - CLOCK_SKEW_MS),
    notAfter: new Date(options.now + options.validityMs),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign |
          x509.KeyUsageFlags.cRLSign |
          x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: withNewline(cert.toString('pem')), key: await keyPem(keys.privateKey) };
}

/**
 * A serving certificate signed by `authority`: serverAuth, with every host in the subject
 * alternative names (an IP address as an IP SAN: the API server checks IPs against those only).
 *
 * @example
 * ```ts
 * const serving = await issueServingCertificate(ca, { hosts: ['webhook.ops.svc', '10.0.0.7'], now: Date.now(), validityMs: 90 * 86_400_000 });
 * ```
 */
export async function issueServingCertificate(
  authority: IssuedCertificate,
  options: ServingOptions,
): Promise<IssuedCertificate> {
  checkValidity(options.validityMs, 'serving');
  const hosts = checkedHosts(options.hosts);
  const x509 = await loadX509();
  const issuer = new x509.X509Certificate(authority.cert);
  const signingKey = await webcrypto.subtle.importKey(
    'pkcs8',
    pemBody(authority.key),
    ALGORITHM,
    false,
    ['sign'],
  );
  const keys = await generateKeys();
  const notAfter = Math.min(options.now + options.validityMs, issuer.notAfter.getTime());
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: [{ CN: [hosts[0]!.slice(0, 64)] }],
    issuer: issuer.subjectName,
    notBefore: new Date(options.now - CLOCK_SKEW_MS),
    notAfter: new Date(notAfter),
    publicKey: keys.publicKey,
    signingKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(
        hosts.map((host) => ({ type: isIP(host) ? 'ip' : 'dns', value: host })),
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(issuer.publicKey),
    ],
  });
  return { cert: withNewline(cert.toString('pem')), key: await keyPem(keys.privateKey) };
}

/**
 * A client certificate signed by `authority` (clientAuth): what the API server presents to admission
 * webhooks when its admission configuration gives it one, and what a webhook server with a client CA
 * asks for.
 *
 * @example
 * ```ts
 * const client = await issueClientCertificate(ca, { commonName: 'kube-apiserver-webhook-client', now: Date.now(), validityMs: 365 * 86_400_000 });
 * ```
 */
export async function issueClientCertificate(
  authority: IssuedCertificate,
  options: ClientOptions,
): Promise<IssuedCertificate> {
  checkValidity(options.validityMs, 'client');
  const commonName = options.commonName.trim().slice(0, 64);
  if (commonName === '') throw new Error('issueClientCertificate: commonName must not be empty');
  const x509 = await loadX509();
  const issuer = new x509.X509Certificate(authority.cert);
  const signingKey = await webcrypto.subtle.importKey(
    'pkcs8',
    pemBody(authority.key),
    ALGORITHM,
    false,
    ['sign'],
  );
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: [{ CN: [commonName] }],
    issuer: issuer.subjectName,
    notBefore: new Date(options.now - CLOCK_SKEW_MS),
    notAfter: new Date(Math.min(options.now + options.validityMs, issuer.notAfter.getTime())),
    publicKey: keys.publicKey,
    signingKey,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(issuer.publicKey),
    ],
  });
  return { cert: withNewline(cert.toString('pem')), key: await keyPem(keys.privateKey) };
}

/** Reads one PEM certificate (the first of a chain); throws on anything that is not one. */
export function readCertificate(pem: string): CertificateInfo {
  const cert = new NodeCertificate(pem);
  return {
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
    fingerprint: cert.fingerprint256,
    isCa: cert.ca,
  };
}

/** The PEM certificates in a bundle, in order; text between them is ignored. */
export function splitPemCertificates(bundle: string): string[] {
  return [...bundle.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)].map(
    (match) => `${match[0]}\n`,
  );
}

/** Whether `key` (PEM) is the private key of `cert` (PEM); false for anything unreadable. */
export function keyMatches(cert: string, key: string): boolean {
  try {
    return new NodeCertificate(cert).checkPrivateKey(createPrivateKey(key));
  } catch {
    return false;
  }
}

/** The hosts, checked: at least one, each an IP address or a lower-case DNS name (optionally `*.`). */
export function checkedHosts(hosts: readonly string[]): string[] {
  if (hosts.length === 0)
    throw new Error(
      'webhook certificate: hosts must name at least one DNS name or IP address (the Service DNS name, e.g. my-webhook.my-namespace.svc)',
    );
  for (const host of hosts) {
    if (isIP(host) === 0 && !(host.length <= 253 && DNS_NAME.test(host))) {
      throw new Error(
        `webhook certificate: host ${JSON.stringify(host)} is neither an IP address nor a lower-case DNS name`,
      );
    }
  }
  return [...new Set(hosts)];
}

function checkValidity(validityMs: number, what: string): void {
  if (!(Number.isFinite(validityMs) && validityMs >= 1000))
    throw new Error(`${what} certificate validity must be at least 1 s, got ${validityMs} ms`);
}

function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, [
    'sign',
    'verify',
  ]) as Promise<webcrypto.CryptoKeyPair>;
}

async function keyPem(key: webcrypto.CryptoKey): Promise<string> {
  const x509 = await loadX509();
  return withNewline(
    x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY'),
  );
}

/** PEM ending in a newline, so certificates concatenate into a bundle every TLS library reads (no `-----END…----------BEGIN` line). */
function withNewline(pem: string): string {
  return pem.endsWith('\n') ? pem : `${pem}\n`;
}

function pemBody(pem: string): ArrayBuffer {
  const der = createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' });
  return der.buffer.slice(der.byteOffset, der.byteOffset + der.byteLength) as ArrayBuffer;
}

/** 16 random bytes, positive (the top bit clear) and without a leading zero byte, as RFC 5280 asks. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString('hex');
}
