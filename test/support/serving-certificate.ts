/** Throwaway certificates for webhook specs (serving, and client ones with their CA), made with the openssl command. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServingCertificate } from '../../src/framework/admission/webhook-server.js';

/** A self-signed P-256 certificate for 127.0.0.1 (its own CA bundle), with `commonName` as subject, valid one day. */
export function selfSignedCertificate(commonName: string): ServingCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        `/CN=${commonName}`,
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return {
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A CA and a client certificate it signs (clientAuth), PEM, made with the openssl command. */
export interface ClientCertificates {
  ca: string;
  client: ServingCertificate;
}

/** A throwaway CA named `commonName` and a client certificate it signs, valid one day. */
export function clientCertificates(commonName: string): ClientCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-client-'));
  const file = (name: string): string => join(dir, name);
  const run = (args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  try {
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    run([
      'req',
      '-x509',
      ...ec,
      '-days',
      '1',
      '-subj',
      `/CN=${commonName}`,
      '-keyout',
      file('ca.key'),
      '-out',
      file('ca.crt'),
    ]);
    run([
      'req',
      ...ec,
      '-subj',
      '/CN=kube-apiserver',
      '-keyout',
      file('client.key'),
      '-out',
      file('client.csr'),
    ]);
    writeFileSync(file('client.ext'), 'extendedKeyUsage=clientAuth\n');
    run([
      'x509',
      '-req',
      '-in',
      file('client.csr'),
      '-CA',
      file('ca.crt'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      file('client.ext'),
      '-out',
      file('client.crt'),
    ]);
    return {
      ca: readFileSync(file('ca.crt'), 'utf8'),
      client: {
        cert: readFileSync(file('client.crt'), 'utf8'),
        key: readFileSync(file('client.key'), 'utf8'),
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
