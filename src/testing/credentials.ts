import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Files the API server needs for token authentication and ServiceAccount tokens. */
export interface Credentials {
  adminToken: string;
  tokenFile: string;
  serviceAccountPublicKey: string;
  serviceAccountPrivateKey: string;
}

/** Writes an admin bearer token (group `system:masters`) and a ServiceAccount signing key pair into `dir`. */
export function writeCredentials(dir: string): Credentials {
  const adminToken = randomBytes(24).toString('hex');
  const tokenFile = join(dir, 'tokens.csv');
  // token,user,uid,"groups"
  writeFileSync(tokenFile, `${adminToken},konductor-admin,konductor-admin,"system:masters"\n`, {
    mode: 0o600,
  });
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  const serviceAccountPublicKey = join(dir, 'sa.pub');
  const serviceAccountPrivateKey = join(dir, 'sa.key');
  writeFileSync(serviceAccountPublicKey, publicKey);
  writeFileSync(serviceAccountPrivateKey, privateKey, { mode: 0o600 });
  return { adminToken, tokenFile, serviceAccountPublicKey, serviceAccountPrivateKey };
}
