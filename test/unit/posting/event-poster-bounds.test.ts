import type { ApiClient, RequestInit } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import { EventPoster } from '../../../src/framework/posting/event-poster.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { LogCapture } from '../../support/log-capture.js';

interface Sent {
  method: string;
  path: string;
  body: Record<string, unknown>;
}

/** The Events API as the poster uses it: records each write; while `held`, writes wait (until aborted or released). */
class FakeEventsApi {
  readonly sent: Sent[] = [];
  held = false;
  missing = new Set<string>();
  private created = 0;
  private readonly waiting: Array<() => void> = [];

  request = async (method: string, path: string, init: RequestInit = {}): Promise<unknown> => {
    this.sent.push({ method, path, body: init.body as Record<string, unknown> });
    if (this.held) {
      await new Promise<void>((resolve, reject) => {
        init.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        this.waiting.push(resolve);
      });
    }
    const name = path.split('/').pop() ?? '';
    if (method === 'PATCH' && this.missing.has(name))
      throw new ApiError(404, `events "${name}" not found`, 'NotFound');
    return method === 'POST' ? { metadata: { name: `event-${++this.created}` } } : {};
  };

  release(): void {
    this.held = false;
    for (const resolve of this.waiting.splice(0)) resolve();
  }

  get client(): ApiClient {
    return this as unknown as ApiClient;
  }
}

const widget = (name: string): KubeObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name, namespace: 'default', uid: `uid-${name}` },
});

let clock: FakeClock;
let api: FakeEventsApi;
let log: LogCapture;
let metrics: MetricsRecorder;

beforeEach(() => {
  clock = installFakeClock({ now: '2024-05-01T12:00:00Z' });
  api = new FakeEventsApi();
  log = new LogCapture();
  metrics = new MetricsRecorder();
});
afterEach(() => clock.uninstall());

function poster(maxQueued?: number): EventPoster {
  return new EventPoster(api.client, log.logger, 'konductor', { clock, metrics, maxQueued });
}

describe('EventPoster bounds', () => {
  test('a repeated identical Event patches the count and lastTimestamp of the Event already posted', async () => {
    const events = poster();
    events.post(widget('a'), 'Warning', 'Invalid', 'bad port');
    await events.flush();
    clock.setNow('2024-05-01T12:00:30Z');
    events.post(widget('a'), 'Warning', 'Invalid', 'bad port');
    await events.flush();

    expect(api.sent.map((sent) => sent.method)).toEqual(['POST', 'PATCH']);
    expect(api.sent[1]).toEqual({
      method: 'PATCH',
      path: '/api/v1/namespaces/default/events/event-1',
      body: { count: 2, lastTimestamp: '2024-05-01T12:00:30Z', message: 'bad port' },
    });
  });

  test('repeats arriving while the first write waits go out in that write, with the count of all', async () => {
    const events = poster();
    api.held = true;
    events.post(widget('a'), 'Warning', 'Other', 'first');
    for (let i = 0; i < 1000; i++) events.post(widget('a'), 'Warning', 'Invalid', 'bad port');
    api.release();
    await events.flush();

    expect(api.sent).toHaveLength(2);
    expect(api.sent[1]?.body).toMatchObject({ reason: 'Invalid', count: 1000 });
  });

  test('an update of an Event the server no longer has creates it again with the full count', async () => {
    const events = poster();
    events.post(widget('a'), 'Warning', 'Invalid', 'bad port');
    await events.flush();
    api.missing.add('event-1');
    events.post(widget('a'), 'Warning', 'Invalid', 'bad port');
    await events.flush();

    expect(api.sent.map((sent) => sent.method)).toEqual(['POST', 'PATCH', 'POST']);
    expect(api.sent[2]?.body).toMatchObject({ count: 2 });
  });

  test('Events of one object past its rate limit are dropped and counted', async () => {
    const events = poster();
    for (let i = 0; i < 30; i++) events.post(widget('a'), 'Warning', `Reason${i}`, 'bad');
    await events.flush();

    expect(api.sent).toHaveLength(25);
    expect(metrics.counter('events_dropped_total', { reason: 'rate_limited' })).toBe(5);
  });

  test('past maxQueued waiting writes new Events are dropped and counted, with one log line for the burst', async () => {
    const events = poster(5);
    api.held = true;
    for (let i = 0; i < 20; i++) events.post(widget(`w${i}`), 'Warning', 'Invalid', 'bad');

    expect(events.queued).toBe(6); // one being written, five waiting
    expect(metrics.counter('events_dropped_total', { reason: 'queue_full' })).toBe(14);
    expect(log.containing('Events are being dropped')).toHaveLength(1);
    api.release();
    await events.flush();
    expect(api.sent).toHaveLength(6);
  });

  test('drops a minute after the last one start a new burst with a new log line', () => {
    const events = poster(1);
    api.held = true;
    for (let i = 0; i < 5; i++) events.post(widget(`w${i}`), 'Warning', 'Invalid', 'bad');
    clock.setNow('2024-05-01T12:00:59Z');
    events.post(widget('late'), 'Warning', 'Invalid', 'bad');
    clock.setNow('2024-05-01T12:02:00Z');
    events.post(widget('later'), 'Warning', 'Invalid', 'bad');

    expect(log.containing('Events are being dropped')).toHaveLength(2);
  });

  test('flush with a deadline returns at the deadline, dropping and counting what is still unwritten', async () => {
    const events = poster();
    api.held = true;
    for (let i = 0; i < 3; i++) events.post(widget(`w${i}`), 'Warning', 'Invalid', 'bad');
    let flushed = false;
    const flushing = events.flush(2_000).then(() => (flushed = true));

    await clock.advanceAsync(1_999);
    expect(flushed).toBe(false);
    await clock.advanceAsync(1);
    await flushing;
    expect(events.queued).toBe(0);
    expect(metrics.counter('events_dropped_total', { reason: 'stopped' })).toBe(3);
    expect(log.containing('were not written: the stop deadline came first')).toHaveLength(1);
    expect(log.containing('could not post an Event')).toHaveLength(0);
  });
});
