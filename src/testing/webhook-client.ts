import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { issueAuthority, issueClientCertificate } from '../framework/admission/certificates.js';

/** File name, in the plane's folder, of the CA that signs the API server's webhook client certificate. */
export const WEBHOOK_CLIENT_CA_FILE = 'webhook-client-ca.crt';

/** What the API server needs to present a client certificate to admission webhooks. */
export interface WebhookClientIdentity {
  /** The CA (PEM) a webhook server trusts to accept the API server as its caller. */
  ca: string;
  /** Path of that CA, {@link WEBHOOK_CLIENT_CA_FILE} in the folder. */
  caPath: string;
  /** The `--admission-control-config-file` that makes the API server present the certificate. */
  admissionConfigPath: string;
}

const VALIDITY_MS = 365 * 86_400_000;

/**
 * Writes into `dir` a CA, a client certificate it signs, a kubeconfig presenting that certificate to
 * every webhook host (user `*`), and an AdmissionConfiguration naming that kubeconfig for both
 * admission webhook plugins, as a cluster administrator sets up a webhook caller identity.
 */
export async function writeWebhookClientIdentity(dir: string): Promise<WebhookClientIdentity> {
  const now = Date.now();
  const authority = await issueAuthority({
    commonName: 'konductor test webhook client CA',
    now,
    validityMs: VALIDITY_MS,
  });
  const client = await issueClientCertificate(authority, {
    commonName: 'kube-apiserver-webhook-client',
    now,
    validityMs: VALIDITY_MS,
  });
  const caPath = join(dir, WEBHOOK_CLIENT_CA_FILE);
  writeFileSync(caPath, authority.cert);
  const kubeconfigPath = join(dir, 'webhook-client.kubeconfig.json');
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    users: [
      {
        name: '*',
        user: {
          'client-certificate-data': Buffer.from(client.cert).toString('base64'),
          'client-key-data': Buffer.from(client.key).toString('base64'),
        },
      },
    ],
  };
  writeFileSync(kubeconfigPath, JSON.stringify(kubeconfig), { mode: 0o600 });
  const webhookConfiguration = {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'WebhookAdmissionConfiguration',
    kubeConfigFile: kubeconfigPath,
  };
  const admissionConfigPath = join(dir, 'admission-config.json');
  const admissionConfig = {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AdmissionConfiguration',
    plugins: ['ValidatingAdmissionWebhook', 'MutatingAdmissionWebhook'].map((name) => ({
      name,
      configuration: webhookConfiguration,
    })),
  };
  writeFileSync(admissionConfigPath, JSON.stringify(admissionConfig));
  return { ca: authority.cert, caPath, admissionConfigPath };
}
