import { randomBytes } from 'node:crypto';
import { AdmissionError, ApiClient, ApiError, Registry, silentLogger, type AdmissionContext, type KubeObject, type MutationContext } from '../../../src/framework/index.js';
import { WebhookServer } from '../../../src/framework/runtime/index.js';
import { webhookConfigurations } from '../../../src/framework/admission/webhook-configuration.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { selfSignedCertificate } from '../../support/serving-certificate.js';
import { waitFor } from '../../support/wait-for.js';

// The webhook server as the real API server calls it: over HTTPS, trusting the caBundle of a webhook
// configuration (built by webhookConfigurations) that points at a URL (local development); only ConfigMaps
// carrying this spec's label are sent.

const marker = `admission-${randomBytes(4).toString('hex')}`;
const certificate = selfSignedCertificate('konductor-webhook-spec');
const seen: { dryRun: boolean; user: string }[] = [];
let client: ApiClient;
let namespace: string;
let server: WebhookServer;

const registry = new Registry()
  .registerAdmission({
    kind: 'validate',
    id: 'ConfigMaps.check',
    resource: { apiVersion: 'v1', name: 'configmaps' },
    options: { objectSelector: { matchLabels: { 'konductor.test/admission': marker } }, timeoutSeconds: 5 },
    fn: ({ body, dryRun, userInfo }: AdmissionContext) => {
      seen.push({ dryRun, user: userInfo.username });
      const size = Number((body.data as Record<string, string> | undefined)?.size ?? 0);
      if (size > 9) throw new AdmissionError(`data.size must be at most 9, got ${size}`);
      return size > 5 ? ['data.size above 5 is slow'] : [];
    },
  })
  .registerAdmission({
    kind: 'mutate',
    id: 'ConfigMaps.defaults',
    resource: { apiVersion: 'v1', name: 'configmaps' },
    options: { objectSelector: { matchLabels: { 'konductor.test/admission': marker } }, timeoutSeconds: 5 },
    fn: ({ patch, body }: MutationContext) => {
      if ((body.data as Record<string, string> | undefined)?.color === undefined) patch.data = { color: 'blue' };
      patch.metadata.labels.defaulted = 'true';
    },
  });

const configMap = (name: string, data: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, labels: { 'konductor.test/admission': marker } },
  data,
});

const collection = (): string => `/api/v1/namespaces/${namespace}/configmaps`;

beforeAll(async () => {
  const kc = sharedKubeConfig();
  client = new ApiClient(kc);
  namespace = await uniqueNamespace(kc, 'admission');
  server = new WebhookServer({ registry, port: 0, host: '127.0.0.1', certificate, logger: silentLogger(), client, resolve: () => undefined });
  const port = await server.start();
  const { validating, mutating } = webhookConfigurations(registry.admission(), {
    name: marker,
    caBundle: certificate.cert,
    endpoint: { url: `https://127.0.0.1:${port}` },
    resolve: () => undefined,
  });
  await client.request('POST', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations', { body: validating });
  await client.request('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', { body: mutating });
  // The API server picks webhook configurations up from its own watch: wait until ours is in force.
  await waitFor(async () => {
    const created = await client.request<KubeObject>('POST', collection(), { body: configMap('probe', {}), query: { dryRun: 'All' } });
    return created.metadata?.labels?.defaulted === 'true';
  }, { what: 'the webhook configurations to take effect' });
});

afterAll(async () => {
  await client.request('DELETE', `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${marker}`).catch(() => undefined);
  await client.request('DELETE', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${marker}`).catch(() => undefined);
  await server.stop();
  client.close();
});

describe('admission webhooks called by the real API server', () => {
  test('a refused object is not created, and the client sees the handler’s message', async () => {
    const error = await client.request('POST', collection(), { body: configMap('too-big', { size: '12' }) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).message).toContain('data.size must be at most 9, got 12');
    const gone = await client.request('GET', `${collection()}/too-big`).catch((e: unknown) => e);
    expect(ApiError.isNotFound(gone)).toBe(true);
  });

  test('a mutated object is stored with the mutation', async () => {
    await client.request('POST', collection(), { body: configMap('defaulted', { size: '1' }) });
    const stored = await client.request<KubeObject>('GET', `${collection()}/defaulted`);
    expect([stored.data, stored.metadata?.labels?.defaulted]).toEqual([{ size: '1', color: 'blue' }, 'true']);
  });

  test('a server-side dry run reaches the handler with dryRun: true', async () => {
    seen.length = 0;
    await client.request('POST', collection(), { body: configMap('dry', { size: '2' }), query: { dryRun: 'All' } });
    expect(seen.map((request) => request.dryRun)).toEqual([true]);
    expect(seen[0]!.user).not.toBe('');
  });
});
