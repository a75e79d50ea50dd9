import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import type { KubeObject } from '../objects/kube-object.js';
import { shortHash } from '../objects/short-hash.js';
import {
  keyMatches,
  readCertificate,
  splitPemCertificates,
  type IssuedCertificate,
} from './certificates.js';
import type { Lifetime, RotationState } from './certificate-rotation.js';

/**
 * The webhook certificates as one Secret holds them, read and written (no I/O here). The Secret is of
 * type `kubernetes.io/tls`, so other tools read the serving pair where they expect it:
 *
 * | key                  | what                                                                 |
 * |----------------------|----------------------------------------------------------------------|
 * | `tls.crt`, `tls.key` | the serving certificate and its key                                  |
 * | `ca.crt`             | the CA bundle the webhook configurations publish (1–3 certificates)  |
 * | `ca-signer.crt/.key` | the CA that signs the serving certificate                            |
 * | `ca-next.crt/.key`   | a staged CA: trusted in `ca.crt`, signing once promoted (rotation)   |
 *
 * Every value is attacker-controlled as far as this file is concerned: each certificate is parsed,
 * each key matched to its certificate, the serving certificate verified against the signer and its
 * names checked against the hosts; whatever fails is left out (and reported), never trusted.
 */

export const SECRET_TYPE = 'kubernetes.io/tls';

/** Longest Secret name (a DNS-1123 subdomain). */
const MAX_SECRET_NAME = 253;
const SECRET_SUFFIX = '-webhook-tls';

/**
 * The default name of an operator's certificate Secret: `<identity>-webhook-tls`. The identity is
 * already a DNS subdomain and is kept whole (rewriting its dots would make `db-op.example.com` and
 * `db.op-example.com` share one Secret); only a name past 253 characters is cut, with a hash of the
 * identity so two cut names never meet.
 */
export function certificateSecretName(identity: string): string {
  const name = `${identity}${SECRET_SUFFIX}`;
  if (name.length <= MAX_SECRET_NAME) return name;
  const digest = shortHash(identity);
  const head = identity
    .slice(0, MAX_SECRET_NAME - SECRET_SUFFIX.length - digest.length - 1)
    .replace(/[^a-z0-9]+$/, '');
  return `${head}-${digest}${SECRET_SUFFIX}`;
}
export const SECRET_KEYS = {
  cert: 'tls.crt',
  key: 'tls.key',
  bundle: 'ca.crt',
  signerCert: 'ca-signer.crt',
  signerKey: 'ca-signer.key',
  nextCert: 'ca-next.crt',
  nextKey: 'ca-next.key',
} as const;

/** A Secret as this file reads it. */
export interface SecretObject extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

/** A certificate with its key and lifetime. */
export interface KeyedCertificate extends IssuedCertificate {
  life: Lifetime;
}

/** The usable contents of the Secret. */
export interface StoredCertificates {
  signer?: KeyedCertificate;
  next?: KeyedCertificate;
  /** Bundle certificates that are neither the signer nor the staged CA. */
  retired: Array<{ cert: string; life: Lifetime }>;
  serving?: KeyedCertificate;
  /** What was found unusable, for the log: `ca-signer.crt: …`. */
  problems: string[];
}

/** Reads the Secret's data; `hosts` are the names the serving certificate must carry. */
export function readStoredCertificates(
  data: Readonly<Record<string, string>> | undefined,
  hosts: readonly string[],
): StoredCertificates {
  const text = (key: string): string | undefined => {
    const value = data?.[key];
    return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
  };
  const problems: string[] = [];
  const signer = keyedAuthority(
    text(SECRET_KEYS.signerCert),
    text(SECRET_KEYS.signerKey),
    SECRET_KEYS.signerCert,
    problems,
  );
  const next = keyedAuthority(
    text(SECRET_KEYS.nextCert),
    text(SECRET_KEYS.nextKey),
    SECRET_KEYS.nextCert,
    problems,
  );
  const known = new Set(
    [signer, next].filter((entry) => entry !== undefined).map((entry) => fingerprint(entry.cert)),
  );
  const retired: StoredCertificates['retired'] = [];
  for (const cert of splitPemCertificates(text(SECRET_KEYS.bundle) ?? '')) {
    const life = lifetime(cert);
    if (life === undefined)
      problems.push(`${SECRET_KEYS.bundle}: an unreadable certificate (left out)`);
    else if (!known.has(fingerprint(cert))) retired.push({ cert, life });
  }
  const serving = servingCertificate(
    text(SECRET_KEYS.cert),
    text(SECRET_KEYS.key),
    signer,
    hosts,
    problems,
  );
  return { signer, next, retired, serving, problems };
}

/** The rotation plan's view: lifetimes only. */
export function rotationState(stored: StoredCertificates): RotationState {
  return {
    authority: stored.signer?.life,
    next: stored.next?.life,
    retired: stored.retired.map((entry) => entry.life),
    serving: stored.serving?.life,
  };
}

/** The bundle to publish: retired CAs, then the signer, then the staged CA. */
export function caBundleOf(stored: StoredCertificates): string {
  const certs = [
    ...stored.retired.map((entry) => entry.cert),
    stored.signer?.cert,
    stored.next?.cert,
  ].filter((cert) => cert !== undefined);
  // One certificate per block, newline-separated: a stored certificate may lack its final newline.
  return certs.map((cert) => (cert.endsWith('\n') ? cert : `${cert}\n`)).join('');
}

/** The Secret's data for `stored` (base64); a key with nothing to hold is `null`, so a merge patch removes it. */
export function secretData(stored: StoredCertificates): Record<string, string | null> {
  const encode = (value: string | undefined): string | null =>
    value === undefined ? null : Buffer.from(value, 'utf8').toString('base64');
  return {
    [SECRET_KEYS.cert]: encode(stored.serving?.cert),
    [SECRET_KEYS.key]: encode(stored.serving?.key),
    [SECRET_KEYS.bundle]: encode(caBundleOf(stored)),
    [SECRET_KEYS.signerCert]: encode(stored.signer?.cert),
    [SECRET_KEYS.signerKey]: encode(stored.signer?.key),
    [SECRET_KEYS.nextCert]: encode(stored.next?.cert),
    [SECRET_KEYS.nextKey]: encode(stored.next?.key),
  };
}

/** A certificate's lifetime in epoch ms, or undefined when it is not a readable certificate. */
export function lifetime(cert: string): Lifetime | undefined {
  try {
    const info = readCertificate(cert);
    return { notBefore: info.notBefore.getTime(), notAfter: info.notAfter.getTime() };
  } catch {
    return undefined;
  }
}

function fingerprint(cert: string): string {
  return readCertificate(cert).fingerprint;
}

function keyedAuthority(
  cert: string | undefined,
  key: string | undefined,
  name: string,
  problems: string[],
): KeyedCertificate | undefined {
  if (cert === undefined && key === undefined) return undefined;
  const life = cert === undefined ? undefined : lifetime(cert);
  if (cert === undefined || key === undefined || life === undefined) {
    problems.push(`${name}: missing or unreadable certificate or key`);
    return undefined;
  }
  if (!readCertificate(cert).isCa) {
    problems.push(`${name}: not a CA certificate`);
    return undefined;
  }
  if (!keyMatches(cert, key)) {
    problems.push(`${name}: the key does not belong to the certificate`);
    return undefined;
  }
  return { cert, key, life };
}

function servingCertificate(
  cert: string | undefined,
  key: string | undefined,
  signer: KeyedCertificate | undefined,
  hosts: readonly string[],
  problems: string[],
): KeyedCertificate | undefined {
  if (cert === undefined && key === undefined) return undefined;
  const life = cert === undefined ? undefined : lifetime(cert);
  if (cert === undefined || key === undefined || life === undefined) {
    problems.push(`${SECRET_KEYS.cert}: missing or unreadable certificate or key`);
    return undefined;
  }
  if (!keyMatches(cert, key)) {
    problems.push(
      `${SECRET_KEYS.cert}: the key in ${SECRET_KEYS.key} does not belong to the certificate`,
    );
    return undefined;
  }
  // Not a problem to report: a new signer or new hosts simply call for a new serving certificate.
  if (signer === undefined) return undefined;
  const parsed = new X509Certificate(cert);
  if (!parsed.verify(new X509Certificate(signer.cert).publicKey)) return undefined;
  const dnsNames = new Set(
    (parsed.subjectAltName ?? '')
      .split(', ')
      .filter((name) => name.startsWith('DNS:'))
      .map((name) => name.slice(4)),
  );
  if (
    !hosts.every((host) => (isIP(host) ? parsed.checkIP(host) !== undefined : dnsNames.has(host)))
  )
    return undefined;
  return { cert, key, life };
}
