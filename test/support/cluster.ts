import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { WEBHOOK_CLIENT_CA_FILE } from '../../src/testing/webhook-client.js';

/** The shared control plane's admin KubeConfig (started by the integration project's global setup). */
export function sharedKubeConfig(): KubeConfig {
  const path = process.env.KONDUCTOR_TEST_KUBECONFIG;
  if (!path)
    throw new Error(
      'KONDUCTOR_TEST_KUBECONFIG is not set: run integration tests through jest (npm run test:integration)',
    );
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

/** The CA of the client certificate the shared plane's API server presents to admission webhooks (`TestControlPlane.webhookClientCA`). */
export function sharedWebhookClientCA(): string {
  const path = process.env.KONDUCTOR_TEST_KUBECONFIG;
  if (!path)
    throw new Error(
      'KONDUCTOR_TEST_KUBECONFIG is not set: run integration tests through jest (npm run test:integration)',
    );
  return readFileSync(join(dirname(path), WEBHOOK_CLIENT_CA_FILE), 'utf8');
}

/** Creates a namespace with a unique name so tests sharing one control plane never see each other's objects. */
export async function uniqueNamespace(kc: KubeConfig, prefix = 'test'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  // The label API servers from 1.21 set on every namespace (this 1.20 one does not), which webhooks
  // of operators limited to some namespaces select them by.
  await kc.makeApiClient(CoreV1Api).createNamespace({
    body: { metadata: { name, labels: { 'kubernetes.io/metadata.name': name } } },
  });
  return name;
}

/** The HTTP status of a failed client call (ApiException `code`, or a watch error's `statusCode`). */
export function statusOf(error: unknown): number | undefined {
  const e = error as { code?: unknown; statusCode?: unknown };
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  return undefined;
}
