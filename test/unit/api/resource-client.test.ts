import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';

/**
 * A local API server: discovery of `/api/v1` (configmaps, namespaced, with a short name) answers
 * `discovery` (a status code or the list), every other request `{}`; each request is recorded.
 */
async function fakeServer(): Promise<{
  server: Server;
  url: string;
  seen: string[];
  discovery: number[];
}> {
  const seen: string[] = [];
  const discovery: number[] = [];
  const server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    request.resume();
    request.on('end', () => {
      if (request.url === '/api/v1') {
        const status = discovery.shift() ?? 200;
        const body =
          status === 200
            ? {
                resources: [
                  {
                    name: 'configmaps',
                    singularName: 'configmap',
                    namespaced: true,
                    kind: 'ConfigMap',
                    shortNames: ['cm'],
                  },
                ],
              }
            : { kind: 'Status', code: status };
        response
          .writeHead(status, { 'Content-Type': 'application/json' })
          .end(JSON.stringify(body));
        return;
      }
      response
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ metadata: { name: 'x', managedFields: [{ manager: 'm' }] } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    discovery,
  };
}

const access = (url: string) => ({
  getCurrentCluster: () => ({ server: url }),
  applyToHTTPSOptions: async () => undefined,
});

describe('a resource client', () => {
  let fake: Awaited<ReturnType<typeof fakeServer>>;
  let client: ApiClient;
  beforeEach(async () => {
    fake = await fakeServer();
    client = new ApiClient(access(fake.url), { fieldManager: 'my-operator' });
  });
  afterEach(async () => {
    client.close();
    await new Promise((resolve) => fake.server.close(resolve));
  });

  test('resolves a short name by discovery once per client, for every resource() of it', async () => {
    await client.resource('v1', 'cm').get({ namespace: 'default', name: 'a' });
    await client.resource('v1', 'cm').get({ namespace: 'default', name: 'b' });
    expect(fake.seen).toEqual([
      'GET /api/v1',
      'GET /api/v1/namespaces/default/configmaps/a',
      'GET /api/v1/namespaces/default/configmaps/b',
    ]);
  });

  test('does not remember a failed discovery: the next call asks again', async () => {
    fake.discovery.push(503);
    const configMaps = client.resource('v1', 'configmaps');
    await expect(configMaps.get({ namespace: 'default', name: 'a' })).rejects.toThrow(ApiError);
    await configMaps.get({ namespace: 'default', name: 'a' });
    expect(fake.seen).toEqual([
      'GET /api/v1',
      'GET /api/v1',
      'GET /api/v1/namespaces/default/configmaps/a',
    ]);
  });

  test('names an unknown resource in its error', async () => {
    await expect(client.resource('v1', 'widgets').list()).rejects.toThrow(
      "v1 has no resource named 'widgets' (known: configmaps)",
    );
  });

  test.each([['a/b'], ['..'], ['.'], ['50%'], ['']])(
    'refuses the name %j before any request, discovery included',
    async (name) => {
      await expect(
        client.resource('v1', 'configmaps').get({ namespace: 'default', name }),
      ).rejects.toThrow(/name/);
      await expect(
        client.resource('v1', 'configmaps').delete({ namespace: 'default', name }),
      ).rejects.toThrow(/name/);
      expect(fake.seen).toEqual([]);
    },
  );

  test('refuses a namespace that is not a namespace name, before any request', async () => {
    await expect(
      client.resource('v1', 'configmaps').get({ namespace: '../kube-system', name: 'a' }),
    ).rejects.toThrow(/refusing the namespace/);
    await expect(client.resource('v1', 'configmaps').list({ namespace: 'a/b' })).rejects.toThrow(
      /refusing the namespace/,
    );
    expect(fake.seen).toEqual([]);
  });

  test('refuses a namespaced read without a namespace', async () => {
    await expect(client.resource('v1', 'configmaps').get({ name: 'a' })).rejects.toThrow(
      'the resource is namespaced; pass a namespace',
    );
  });

  test('refuses a subresource that is not a word', async () => {
    await expect(
      client
        .resource('v1', 'configmaps')
        .patch({ namespace: 'default', name: 'a' }, {}, { subresource: '../secrets' }),
    ).rejects.toThrow(/refusing the subresource/);
    expect(fake.seen).toEqual([]);
  });

  test('encodes the name in the path (characters a name may hold but a URL may not)', async () => {
    await client.resource('v1', 'configmaps').get({ namespace: 'default', name: 'a b?c#d' });
    expect(fake.seen.at(-1)).toBe('GET /api/v1/namespaces/default/configmaps/a%20b%3Fc%23d');
  });

  test('answers without managedFields', async () => {
    const answer = await client
      .resource('v1', 'configmaps')
      .get({ namespace: 'default', name: 'x' });
    expect(answer.metadata).toEqual({ name: 'x' });
  });

  test('sends a server-side apply under the client field manager, with force only when asked', async () => {
    const configMaps = client.resource('v1', 'configmaps');
    await configMaps.apply({ metadata: { name: 'a', namespace: 'default' } });
    await configMaps.apply(
      { metadata: { name: 'a', namespace: 'default' } },
      { force: true, dryRun: true },
    );
    expect(fake.seen.slice(1)).toEqual([
      'PATCH /api/v1/namespaces/default/configmaps/a?fieldManager=my-operator',
      'PATCH /api/v1/namespaces/default/configmaps/a?dryRun=All&fieldManager=my-operator&force=true',
    ]);
  });

  test('sends the list selectors, the page size and the continue token', async () => {
    await client.resource('v1', 'configmaps').list({
      namespace: 'default',
      labelSelector: { app: 'web', tier: 'db' },
      fieldSelector: 'metadata.name=a',
      limit: 2,
      continue: 'tok',
    });
    expect(fake.seen.at(-1)).toBe(
      'GET /api/v1/namespaces/default/configmaps?labelSelector=app%3Dweb%2Ctier%3Ddb&fieldSelector=metadata.name%3Da&limit=2&continue=tok',
    );
  });

  test('refuses a limit that is not a positive integer', async () => {
    await expect(client.resource('v1', 'configmaps').list({ limit: 0 })).rejects.toThrow(
      'limit must be a positive integer',
    );
  });
});
