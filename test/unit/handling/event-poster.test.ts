import nock from 'nock';
import type { ApiClient } from '../../../src/framework/api/api-client.js';
import { EventPoster } from '../../../src/framework/posting/events.js';
import type { KubeObject } from '../../../src/framework/watching/events.js';
import { makeClient, SERVER, isolateNock } from '../watching/fake-api.js';
import { LogCapture } from './log-capture.js';

const EVENTS = '/api/v1/namespaces/default/events';
const widget: KubeObject = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w1', namespace: 'default', uid: 'uid-1', resourceVersion: '3' },
};

let client: ApiClient;
let log: LogCapture;

isolateNock();

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
    nock(SERVER)
      .post(EVENTS)
      .reply(403, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 403, reason: 'Forbidden', message: 'events is forbidden' });
    const poster = new EventPoster(client, log.logger);

    expect(() => poster.post(widget, 'Warning', 'HandlerFailed', 'create failed')).not.toThrow();
    await expect(poster.flush()).resolves.toBeUndefined();

    expect(log.atLeast('warn')).toEqual([
      expect.objectContaining({ msg: 'could not post an Event', reason: 'HandlerFailed', namespace: 'default', name: 'w1', err: expect.stringContaining('403') }),
    ]);
    expect(poster.queued).toBe(0);
  });

  test('an Event that cannot reach the server at all is logged, and later Events are still posted', async () => {
    nock(SERVER).post(EVENTS).replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    let posted: { reason?: string } | undefined;
    nock(SERVER)
      .post(EVENTS, (body: { reason?: string }) => {
        posted = body;
        return true;
      })
      .reply(201, {});
    const poster = new EventPoster(client, log.logger);

    poster.post(widget, 'Warning', 'First', 'lost');
    poster.post(widget, 'Normal', 'Second', 'delivered');
    await poster.flush();

    expect(log.atLeast('warn')).toEqual([expect.objectContaining({ msg: 'could not post an Event', reason: 'First' })]);
    expect(posted?.reason).toBe('Second');
  });
});
