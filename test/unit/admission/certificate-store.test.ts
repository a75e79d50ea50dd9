import type { ApiClient } from '../../../src/framework/api/api-client.js';
import {
  CertificateStore,
  type CertificateStoreOptions,
} from '../../../src/framework/admission/certificate-store.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';

// What CertificateStore refuses before it makes any request (its I/O is specified in
// test/integration/admission/certificate-store.test.ts).
const noClient = {} as ApiClient;
const options = (overrides: Partial<CertificateStoreOptions>): CertificateStoreOptions => ({
  client: noClient,
  namespace: 'ops',
  secretName: 'webhook-tls',
  hosts: ['webhook.ops.svc'],
  logger: silentLogger(),
  ...overrides,
});

describe('CertificateStore options', () => {
  test('accept the defaults', () => {
    expect(() => new CertificateStore(options({}))).not.toThrow();
  });

  test('refuse a namespace that is not a DNS-1123 label and a Secret name that is not a DNS-1123 subdomain', () => {
    expect(() => new CertificateStore(options({ namespace: '../kube-system' }))).toThrow(
      /namespace "..\/kube-system" is not a DNS-1123 label/,
    );
    expect(() => new CertificateStore(options({ secretName: 'Webhook/TLS' }))).toThrow(
      /secretName "Webhook\/TLS" is not a DNS-1123 subdomain/,
    );
  });

  test('refuse no hosts and a host that is not a DNS name or IP address', () => {
    expect(() => new CertificateStore(options({ hosts: [] }))).toThrow(/at least one/);
    expect(() => new CertificateStore(options({ hosts: ['webhook ops'] }))).toThrow(
      /"webhook ops"/,
    );
  });

  test('refuse an overlap shorter than the poll interval (a replica would miss a CA change)', () => {
    expect(
      () => new CertificateStore(options({ pollIntervalMs: 60_000, overlapMs: 1000 })),
    ).toThrow(/overlapMs \(1000\) must be at least pollIntervalMs \(60000\)/);
  });

  test('refuse a CA lifetime too short for a rotation to complete, naming the Secret', () => {
    expect(
      () =>
        new CertificateStore(
          options({ caValidityMs: 10_000, servingValidityMs: 5000, pollIntervalMs: 5000 }),
        ),
    ).toThrow(/Secret ops\/webhook-tls.*caValidityMs/);
  });

  test('refuse a poll interval that is not a positive number', () => {
    expect(() => new CertificateStore(options({ pollIntervalMs: 0 }))).toThrow(
      /pollIntervalMs must be a positive number/,
    );
  });
});
