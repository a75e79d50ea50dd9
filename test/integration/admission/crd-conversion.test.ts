import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  ApiClient,
  on,
  PermanentError,
  type ConversionContext,
  type KubeObject,
} from '../../../src/framework/index.js';
import {
  installCrds,
  runOperator,
  waitFor,
  type TestOperator,
} from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';

/**
 * A CRD with two versions converted by the operator: `v1` keeps `spec.size`, `v2` keeps
 * `spec.dimensions.size`; v1 is stored. The API server calls `@on.convert` over HTTPS for every
 * read or write in the version not stored.
 */
const GROUP = 'convert.konductor.dev';

function schema(spec: Record<string, unknown>): Record<string, unknown> {
  return {
    openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: spec } } },
  };
}
const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `gadgets.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
    versions: [
      { name: 'v1', served: true, storage: true, schema: schema({ size: { type: 'integer' } }) },
      {
        name: 'v2',
        served: true,
        storage: false,
        schema: schema({
          dimensions: { type: 'object', properties: { size: { type: 'integer' } } },
        }),
      },
    ],
  },
};

type Gadget = KubeObject & { spec: { size?: number; dimensions?: { size?: number } } };

class GadgetVersions {
  @on.convert(GROUP, 'gadgets')
  convert({ object, toVersion }: ConversionContext): KubeObject {
    const gadget = object as Gadget;
    if (toVersion === `${GROUP}/v2`)
      return { ...gadget, spec: { dimensions: { size: gadget.spec.size } } };
    if (toVersion === `${GROUP}/v1`)
      return { ...gadget, spec: { size: gadget.spec.dimensions?.size } };
    throw new PermanentError(`no conversion to ${toVersion}`);
  }
}

let kc: KubeConfig;
let api: ApiClient;
let running: TestOperator | undefined;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installCrds(kc, [crd]);
  api = new ApiClient(kc);
});

afterAll(async () => {
  await running?.stop();
  await api
    .resource('apiextensions.k8s.io/v1', 'customresourcedefinitions')
    .delete({ name: `gadgets.${GROUP}` });
  api?.close();
});

describe('conversion webhooks', () => {
  test('objects of a two-version CRD round-trip through the conversion handler', async () => {
    const namespace = await uniqueNamespace(kc, 'convert');
    const identity = `cnv-${randomBytes(4).toString('hex')}.konductor.dev`;
    running = await runOperator({
      kubeConfig: kc,
      handlers: [GadgetVersions],
      namespaces: [namespace],
      identity,
      webhooks: { port: 0, url: 'https://127.0.0.1' },
    });
    const v1 = api.resource<Gadget>(`${GROUP}/v1`, 'gadgets');
    const v2 = api.resource<Gadget>(`${GROUP}/v2`, 'gadgets');

    // The API server serves a CRD's new conversion shortly after it is written: until then a v2
    // object would be stored unconverted, so probe objects are written until one comes back converted.
    let probes = 0;
    await waitFor(
      async () => {
        const name = `probe-${probes++}`;
        await v2
          .create({
            apiVersion: `${GROUP}/v2`,
            kind: 'Gadget',
            metadata: { namespace, name },
            spec: { dimensions: { size: 1 } },
          })
          .catch(() => undefined);
        const stored = await v1.find({ namespace, name }).catch(() => undefined);
        return stored?.spec.size === 1;
      },
      { what: 'the API server to convert Gadgets through the webhook' },
    );

    const created = await v2.create({
      apiVersion: `${GROUP}/v2`,
      kind: 'Gadget',
      metadata: { namespace, name: 'g' },
      spec: { dimensions: { size: 3 } },
    });

    expect(created.spec).toEqual({ dimensions: { size: 3 } });
    expect((await v1.get({ namespace, name: 'g' })).spec).toEqual({ size: 3 });
    await v1.patch({ namespace, name: 'g' }, { spec: { size: 4 } });
    expect((await v2.get({ namespace, name: 'g' })).spec).toEqual({ dimensions: { size: 4 } });
  });
});
