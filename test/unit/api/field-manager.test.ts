import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { Identity } from '../../../src/framework/state/identity.js';

/** A local API server answering `{}` to everything, recording each request as `METHOD path?query`. */
async function recordingServer(): Promise<{ server: Server; url: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    request.resume();
    request.on('end', () =>
      response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}'),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const access = (url: string) => ({
  getCurrentCluster: () => ({ server: url }),
  applyToHTTPSOptions: async () => undefined,
});

describe('the field manager of a client', () => {
  let recording: Awaited<ReturnType<typeof recordingServer>>;
  let client: ApiClient | undefined;
  beforeEach(async () => {
    recording = await recordingServer();
  });
  afterEach(async () => {
    client?.close();
    client = undefined;
    await new Promise((resolve) => recording.server.close(resolve));
  });

  test('goes with every PATCH, POST and PUT, and with no read or delete', async () => {
    client = new ApiClient(access(recording.url), { fieldManager: 'konductor' });
    for (const method of ['GET', 'PATCH', 'POST', 'PUT', 'DELETE'])
      await client.request(method, '/api/v1/namespaces/default/configmaps/x', {
        body: method === 'GET' || method === 'DELETE' ? undefined : {},
      });
    expect(recording.seen).toEqual([
      'GET /api/v1/namespaces/default/configmaps/x',
      'PATCH /api/v1/namespaces/default/configmaps/x?fieldManager=konductor',
      'POST /api/v1/namespaces/default/configmaps/x?fieldManager=konductor',
      'PUT /api/v1/namespaces/default/configmaps/x?fieldManager=konductor',
      'DELETE /api/v1/namespaces/default/configmaps/x',
    ]);
  });

  test("gives way to the caller's own (server-side apply names its manager)", async () => {
    client = new ApiClient(access(recording.url), { fieldManager: 'konductor' });
    await client.request('PATCH', '/api/v1/namespaces/default/configmaps/x', {
      body: {},
      query: { fieldManager: 'my-apply', force: true },
    });
    expect(recording.seen).toEqual([
      'PATCH /api/v1/namespaces/default/configmaps/x?fieldManager=my-apply&force=true',
    ]);
  });

  test('is not sent when the client names none', async () => {
    client = new ApiClient(access(recording.url));
    await client.request('PATCH', '/api/v1/namespaces/default/configmaps/x', { body: {} });
    expect(recording.seen).toEqual(['PATCH /api/v1/namespaces/default/configmaps/x']);
  });

  test("is an identity's, cut to the 128 characters the API server allows", async () => {
    const identity = Identity.parse(`${'a'.repeat(100)}.${'b'.repeat(100)}.example.com`);
    client = new ApiClient(access(recording.url), { fieldManager: identity.fieldManager });
    await client.request('POST', '/api/v1/namespaces/default/events', { body: {} });
    const manager = new URL(`http://x${recording.seen[0]!.split(' ')[1]}`).searchParams.get(
      'fieldManager',
    );
    expect(manager).toBe(identity.fieldManager);
    expect(manager!.length).toBeLessThanOrEqual(128);
  });

  test.each(['', 'x'.repeat(129), 'with space', 'ünïcode'])(
    'refuses %j, saying what a field manager may be',
    (manager) => {
      expect(() => new ApiClient(access(recording.url), { fieldManager: manager })).toThrow(
        'must be 1 to 128 printable ASCII characters',
      );
    },
  );
});
