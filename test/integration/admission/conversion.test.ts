import { randomBytes } from 'node:crypto';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { ApiClient, Registry, silentLogger, type ConversionContext, type KubeObject } from '../../../src/framework/index.js';
import { WebhookServer } from '../../../src/framework/runtime/index.js';
import { crdConversion } from '../../../src/framework/admission/webhook-configuration.js';
import { installCrds } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { selfSignedCertificate } from '../../support/serving-certificate.js';
import { waitFor } from '../../support/wait-for.js';

// A CRD with two versions whose conversion webhook is the webhook server: the real API server converts
// stored objects through it. v1 has `spec.size`; v2 renamed it `spec.replicas`.

const group = `conv-${randomBytes(4).toString('hex')}.konductor.test`;
const certificate = selfSignedCertificate('konductor-conversion-spec');
let client: ApiClient;
let namespace: string;
let server: WebhookServer;

function convert({ object, toVersion }: ConversionContext): KubeObject {
  const spec = (object.spec ?? {}) as { size?: number; replicas?: number };
  return toVersion === `${group}/v2` ? { ...object, spec: { replicas: spec.size } } : { ...object, spec: { size: spec.replicas } };
}

function crd(port: number): V1CustomResourceDefinition {
  const schema = (field: string) => ({
    openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { [field]: { type: 'integer' } } } } },
  });
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `gizmos.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo' },
      versions: [
        { name: 'v1', served: true, storage: true, schema: schema('size') },
        { name: 'v2', served: true, storage: false, schema: schema('replicas') },
      ],
      conversion: crdConversion({ group, name: 'gizmos' }, { caBundle: certificate.cert, endpoint: { url: `https://127.0.0.1:${port}` } }),
    },
  } as unknown as V1CustomResourceDefinition;
}

const path = (version: string, name?: string): string => `/apis/${group}/${version}/namespaces/${namespace}/gizmos${name ? `/${name}` : ''}`;

beforeAll(async () => {
  const kc = sharedKubeConfig();
  client = new ApiClient(kc);
  namespace = await uniqueNamespace(kc, 'conversion');
  const registry = new Registry().registerConversion({ id: 'Gizmos.convert', group, name: 'gizmos', fn: convert });
  server = new WebhookServer({ registry, port: 0, host: '127.0.0.1', certificate, logger: silentLogger(), client, resolve: () => undefined });
  await installCrds(kc, [crd(await server.start())]);
});

afterAll(async () => {
  await client.request('DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.${group}`).catch(() => undefined);
  await server.stop();
  client.close();
});

describe('a two-version CRD converted by the webhook server', () => {
  test('an object stored at v1 reads as v2 through the handler, and back', async () => {
    await waitFor(
      () => client.request('POST', path('v1'), { body: { apiVersion: `${group}/v1`, kind: 'Gizmo', metadata: { name: 'small' }, spec: { size: 3 } } }).then(() => true, () => false),
      { what: 'the Gizmo CRD to accept objects' },
    );
    const asV2 = (await waitFor(() => client.request<KubeObject>('GET', path('v2', 'small')).catch(() => undefined), { what: 'a v2 read of the object' }))!;
    expect([asV2.apiVersion, asV2.spec]).toEqual([`${group}/v2`, { replicas: 3 }]);
    expect((await client.request<KubeObject>('GET', path('v1', 'small'))).spec).toEqual({ size: 3 });
  });

  test('an object written at v2 is stored converted and reads back the same at v2', async () => {
    await client.request('POST', path('v2'), { body: { apiVersion: `${group}/v2`, kind: 'Gizmo', metadata: { name: 'big' }, spec: { replicas: 7 } } });
    expect((await client.request<KubeObject>('GET', path('v1', 'big'))).spec).toEqual({ size: 7 });
    expect((await client.request<KubeObject>('GET', path('v2', 'big'))).spec).toEqual({ replicas: 7 });
  });
});
