import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { EventPoster } from '../../../src/framework/posting/event-poster.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { makeClient, SERVER } from '../watching/fake-api.js';
import { LogCapture } from '../../support/log-capture.js';

const EVENTS = '/api/v1/namespaces/default/events';
const widget: KubeObject = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w1', namespace: 'default', uid: 'uid-1', resourceVersion: '3' },
};

let client: ApiClient;
let log: LogCapture;

beforeEach(() => {
  client = makeClient();
  log = new LogCapture();
});

afterEach(() => {
  nock.cleanAll();
  client.close();
});

describe('EventPoster', () => {
  test('an Event the API server refuses is logged as a warning naming the object, never thrown', async () => {
    nock(SERVER).post(EVENTS).reply(403, {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      code: 403,
      reason: 'Forbidden',
      message: 'events is forbidden',
    });
    const poster = new EventPoster(client, log.logger);

    expect(() => poster.post(widget, 'Warning', 'HandlerFailed', 'create failed')).not.toThrow();
    await expect(poster.flush()).resolves.toBeUndefined();

    expect(log.atLeast('warn')).toEqual([
      expect.objectContaining({
        msg: 'could not post an Event',
        reason: 'HandlerFailed',
        namespace: 'default',
        name: 'w1',
        err: expect.stringContaining('403'),
      }),
    ]);
    expect(poster.queued).toBe(0);
  });

  test('an Event that cannot reach the server at all is logged, and later Events are still posted', async () => {
    // A real connection cut by a real server (nock's simulated socket errors can fire before node's
    // request has claimed the socket, which only happens in the mock).
    nock.enableNetConnect('127.0.0.1');
    let posted: { reason?: string } | undefined;
    let requests = 0;
    const server = createServer((request, response) => {
      requests += 1;
      if (requests === 1) {
        request.socket.destroy();
        return;
      }
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        posted = JSON.parse(body) as { reason?: string };
        response.writeHead(201, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const direct = new ApiClient({
      getCurrentCluster: () => ({ server: `http://127.0.0.1:${port}` }),
      applyToHTTPSOptions: async () => undefined,
    });
    try {
      const poster = new EventPoster(direct, log.logger);
      poster.post(widget, 'Warning', 'First', 'lost');
      poster.post(widget, 'Normal', 'Second', 'delivered');
      await poster.flush();

      expect(log.atLeast('warn')).toEqual([
        expect.objectContaining({ msg: 'could not post an Event', reason: 'First' }),
      ]);
      expect(posted?.reason).toBe('Second');
    } finally {
      direct.close();
      server.close();
      nock.disableNetConnect();
    }
  });
});
