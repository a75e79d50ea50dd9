import { X509Certificate } from 'node:crypto';
import {
  issueAuthority,
  issueServingCertificate,
  keyMatches,
  readCertificate,
  splitPemCertificates,
  CLOCK_SKEW_MS,
} from '../../../src/framework/admission/certificates.js';

// The webhook's CA and serving certificate, as the API server (a TLS client trusting only the CA) checks them.
const DAY = 86_400_000;
const now = Date.parse('2026-11-24T12:00:00Z');

describe('issueAuthority', () => {
  test('makes a self-signed CA certificate whose key matches it', async () => {
    const ca = await issueAuthority({ commonName: 'test CA', now, validityMs: 365 * DAY });
    const cert = new X509Certificate(ca.cert);

    expect(cert.ca).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.subject).toBe('CN=test CA');
    expect(keyMatches(ca.cert, ca.key)).toBe(true);
    expect(ca.key).toContain('-----BEGIN PRIVATE KEY-----');
  });

  test('is valid from a minute before `now` (clock skew) until now + validity', async () => {
    const ca = await issueAuthority({ commonName: 'test CA', now, validityMs: 10 * DAY });
    const info = readCertificate(ca.cert);

    expect(info.notBefore.getTime()).toBe(now - CLOCK_SKEW_MS);
    expect(info.notAfter.getTime()).toBe(now + 10 * DAY);
    expect(info.isCa).toBe(true);
    expect(info.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  });

  test('refuses an empty common name and a validity under a second', async () => {
    await expect(issueAuthority({ commonName: ' ', now, validityMs: DAY })).rejects.toThrow(
      /commonName/,
    );
    await expect(issueAuthority({ commonName: 'x', now, validityMs: 10 })).rejects.toThrow(
      /at least 1 s/,
    );
  });
});

describe('issueServingCertificate', () => {
  test('is signed by the CA and not by another one', async () => {
    const ca = await issueAuthority({ commonName: 'ca', now, validityMs: DAY });
    const other = await issueAuthority({ commonName: 'other', now, validityMs: DAY });
    const serving = new X509Certificate(
      (await issueServingCertificate(ca, { hosts: ['webhook.ns.svc'], now, validityMs: DAY / 2 }))
        .cert,
    );

    expect(serving.verify(new X509Certificate(ca.cert).publicKey)).toBe(true);
    expect(serving.verify(new X509Certificate(other.cert).publicKey)).toBe(false);
    expect(serving.checkIssued(new X509Certificate(ca.cert))).toBe(true);
  });

  test('names DNS hosts as DNS SANs and IP addresses (v4 and v6) as IP SANs', async () => {
    const ca = await issueAuthority({ commonName: 'ca', now, validityMs: DAY });
    const serving = new X509Certificate(
      (
        await issueServingCertificate(ca, {
          hosts: ['webhook.ns.svc', '127.0.0.1', '::1'],
          now,
          validityMs: DAY,
        })
      ).cert,
    );

    expect(serving.checkHost('webhook.ns.svc')).toBe('webhook.ns.svc');
    expect(serving.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(serving.checkIP('::1')).toBe('::1');
    expect(serving.checkHost('other.ns.svc')).toBeUndefined();
    expect(serving.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(serving.subjectAltName).not.toContain('DNS:127.0.0.1');
  });

  test('is a server certificate, not a CA, with its own matching key', async () => {
    const ca = await issueAuthority({ commonName: 'ca', now, validityMs: DAY });
    const issued = await issueServingCertificate(ca, {
      hosts: ['webhook.ns.svc'],
      now,
      validityMs: DAY,
    });
    const serving = new X509Certificate(issued.cert);

    expect(serving.ca).toBe(false);
    expect(serving.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(keyMatches(issued.cert, issued.key)).toBe(true);
    expect(keyMatches(issued.cert, ca.key)).toBe(false);
  });

  test('never outlives the CA that signs it', async () => {
    const ca = await issueAuthority({ commonName: 'ca', now, validityMs: 5 * DAY });
    const serving = await issueServingCertificate(ca, {
      hosts: ['webhook.ns.svc'],
      now,
      validityMs: 90 * DAY,
    });

    expect(readCertificate(serving.cert).notAfter.getTime()).toBe(now + 5 * DAY);
  });

  test('refuses no hosts, and a host that is neither a DNS name nor an IP address', async () => {
    const ca = await issueAuthority({ commonName: 'ca', now, validityMs: DAY });
    await expect(issueServingCertificate(ca, { hosts: [], now, validityMs: DAY })).rejects.toThrow(
      /at least one/,
    );
    await expect(
      issueServingCertificate(ca, { hosts: ['Bad_Host'], now, validityMs: DAY }),
    ).rejects.toThrow(/"Bad_Host"/);
  });
});

describe('reading PEM', () => {
  test('splitPemCertificates returns each certificate of a bundle and ignores text between them', async () => {
    const a = await issueAuthority({ commonName: 'a', now, validityMs: DAY });
    const b = await issueAuthority({ commonName: 'b', now, validityMs: DAY });

    const certs = splitPemCertificates(`# first\n${a.cert}junk\n${b.cert}`);

    expect(certs.map((pem) => new X509Certificate(pem).subject)).toEqual(['CN=a', 'CN=b']);
  });

  test('certificates and keys end with a newline, so concatenated certificates stay a readable bundle', async () => {
    const a = await issueAuthority({ commonName: 'a', now, validityMs: DAY });
    const b = await issueAuthority({ commonName: 'b', now, validityMs: DAY });

    expect([a.cert, a.key].every((pem) => pem.endsWith('-----\n'))).toBe(true);
    expect(splitPemCertificates(a.cert + b.cert)).toHaveLength(2);
    expect(a.cert + b.cert).not.toContain('----------');
  });

  test('readCertificate throws on garbage, and keyMatches answers false for it', () => {
    expect(() => readCertificate('not a certificate')).toThrow();
    expect(keyMatches('garbage', 'garbage')).toBe(false);
  });
});
