import { randomBytes, X509Certificate } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  AdmissionError,
  ApiClient,
  on,
  type AdmissionContext,
  type KubeObject,
} from '../../../src/framework/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { installWidgetCrd, WIDGET_API_VERSION, type Widget } from '../../support/widgets.js';

/**
 * The webhook certificates renew themselves while the API server keeps calling: with lifetimes of
 * seconds, 30 s of admissions at 10 per second see serving certificates and a CA replaced, and not
 * one admission fails.
 */
const RATE_PER_S = 10;
const DURATION_MS = 30_000;

class Refuser {
  @on.validate(WIDGET_API_VERSION, 'widgets', { id: 'size' })
  size({ spec }: AdmissionContext<Widget>): void {
    if ((spec.size ?? 0) > 9) throw new AdmissionError('spec.size must be at most 9');
  }
}

let kc: KubeConfig;
let api: ApiClient;
let running: TestOperator | undefined;
let identity = '';

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  api = new ApiClient(kc);
});

afterAll(async () => {
  await running?.stop();
  if (identity)
    await api
      .resource('admissionregistration.k8s.io/v1', 'validatingwebhookconfigurations')
      .delete({ name: identity });
  api?.close();
});

describe('webhook certificate rotation', () => {
  test('10 admissions per second for 30 s through serving and CA renewals: none fails', async () => {
    const namespace = await uniqueNamespace(kc, 'adm-rotate');
    identity = `rot-${randomBytes(4).toString('hex')}.konductor.dev`;
    const secretName = 'webhook-tls';
    running = await runOperator({
      kubeConfig: kc,
      handlers: [Refuser],
      namespaces: [namespace],
      identity,
      webhooks: {
        port: 0,
        url: 'https://127.0.0.1',
        certificates: { secretName, servingValidity: 9, caValidity: 18, pollInterval: 1 },
      },
    });
    const widgets = api.resource<Widget>(WIDGET_API_VERSION, 'widgets');
    const secrets = api.resource<KubeObject & { data?: Record<string, string> }>('v1', 'secrets');
    const servingSeen = new Set<string>();
    const authoritiesSeen = new Set<string>();
    const look = async (): Promise<void> => {
      const data = (await secrets.get({ namespace, name: secretName })).data ?? {};
      const serving = new X509Certificate(
        Buffer.from(data['tls.crt'] ?? '', 'base64').toString('utf8'),
      );
      servingSeen.add(serving.fingerprint256);
      const bundle = Buffer.from(data['ca.crt'] ?? '', 'base64').toString('utf8');
      const authorities = (
        bundle.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []
      ).map((pem) => new X509Certificate(pem));
      const signer = authorities.find((authority) => serving.verify(authority.publicKey));
      if (signer) authoritiesSeen.add(signer.fingerprint256);
    };

    const failures: string[] = [];
    let admitted = 0;
    let refusedAsExpected = 0;
    const started = Date.now();
    const calls: Promise<void>[] = [];
    for (let i = 0; Date.now() - started < DURATION_MS; i++) {
      const size = i % 10 === 0 ? 10 : 1;
      calls.push(
        widgets
          .create(
            {
              apiVersion: WIDGET_API_VERSION,
              kind: 'Widget',
              metadata: { namespace, name: `w-${i}` },
              spec: { size },
            },
            { dryRun: true },
          )
          .then(
            () => (size > 9 ? failures.push(`w-${i}: admitted a refused object`) : admitted++),
            (error: unknown) => {
              const message = error instanceof Error ? error.message : String(error);
              if (size > 9 && message.includes('spec.size must be at most 9')) refusedAsExpected++;
              else failures.push(`w-${i}: ${message}`);
            },
          )
          .then(() => undefined),
      );
      if (i % RATE_PER_S === 0) calls.push(look());
      await new Promise((resolve) => setTimeout(resolve, 1000 / RATE_PER_S));
    }
    await Promise.all(calls);

    expect(failures).toEqual([]);
    expect(admitted + refusedAsExpected).toBeGreaterThanOrEqual(
      (DURATION_MS / 1000) * RATE_PER_S * 0.9,
    );
    // The test proves something only if certificates were replaced while it ran.
    expect(servingSeen.size).toBeGreaterThanOrEqual(3);
    expect(authoritiesSeen.size).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
