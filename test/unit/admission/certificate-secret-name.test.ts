import { certificateSecretName } from '../../../src/framework/admission/certificate-secret.js';

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

describe("the name of an operator's certificate Secret", () => {
  test('is the identity followed by -webhook-tls', () => {
    expect(certificateSecretName('konductor.dev')).toBe('konductor.dev-webhook-tls');
  });

  test('identities that differ only in where their dots and dashes are get different Secrets', () => {
    expect(certificateSecretName('db-op.example.com')).not.toBe(
      certificateSecretName('db.op-example.com'),
    );
  });

  test('a name past 253 characters is cut to a DNS subdomain that keeps a hash of the whole identity', () => {
    const long = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}`;
    const one = certificateSecretName(`${long}.one`);
    const other = certificateSecretName(`${long}.two`);
    expect(one.length).toBeLessThanOrEqual(253);
    expect(one).toMatch(SUBDOMAIN);
    expect(one).toMatch(/-[0-9a-f]{8}-webhook-tls$/);
    expect(one).not.toBe(other);
  });
});
