/** Throwaway self-signed serving certificates for webhook specs, made with the openssl command. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServingCertificate } from '../../src/framework/runtime/index.js';

/** A self-signed P-256 certificate for 127.0.0.1 (its own CA bundle), with `commonName` as subject, valid one day. */
export function selfSignedCertificate(commonName: string): ServingCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-cert-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', `/CN=${commonName}`, '-addext', 'subjectAltName=IP:127.0.0.1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    return { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
