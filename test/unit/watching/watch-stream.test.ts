import { jest } from '@jest/globals';
import nock from 'nock';
import { filter, firstValueFrom, take } from 'rxjs';
import type { ApiClient } from '../../../src/framework/api/api-client.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { MemoryBudgetError } from '../../../src/framework/watching/memory-budget.js';
import { afterWatch } from '../../../src/framework/watching/watch-request.js';
import {
  watchResource,
  type WatchStreamOptions,
} from '../../../src/framework/watching/watch-stream.js';
import { installFakeClock, uninstallFakeClock } from '../../support/fake-clock.js';
import { waitFor } from '../../support/wait-for.js';
import { WIDGET_API_VERSION } from '../../support/widget-objects.js';
import {
  FakeApi,
  line,
  makeClient,
  quickly,
  Recorded,
  settle,
  status,
  widget,
  widgets,
} from './fake-api.js';

let client: ApiClient;
let api: FakeApi;
let metrics: MetricsRecorder;
let recorded: Recorded | undefined;

beforeEach(() => {
  client = makeClient();
  api = new FakeApi();
  metrics = new MetricsRecorder();
  recorded = undefined;
});

afterEach(() => {
  recorded?.unsubscribe();
  api.dispose();
  nock.abortPendingRequests();
  nock.cleanAll();
  client.close();
  uninstallFakeClock();
});

/** Fast timings for tests; the idle watchdog is long unless a test is about it. */
function options(extra: WatchStreamOptions = {}): WatchStreamOptions {
  return {
    backoff: { initialMs: 10, jitter: 0 },
    idleTimeoutMs: 5_000,
    timeoutSeconds: () => 300,
    metrics,
    ...extra,
  };
}

function watch(extra: WatchStreamOptions = {}): Recorded {
  recorded = new Recorded(watchResource(client, widgets, options(extra)));
  return recorded;
}

/** One watch request as the stream made it: when it was opened, answered, and given up (if it was). */
interface WatchCall {
  openedAt: number;
  answeredAt?: number;
  abortedAt?: number;
}

/**
 * Records each watch request at the client call, on the fake clock. The specs on it hold time still
 * while the fake server answers (real I/O), so these are the exact times the stream acted; a request
 * reaches the server some real turns later, too late to show that it was not yet made.
 */
function recordWatchCalls(): WatchCall[] {
  const calls: WatchCall[] = [];
  const stream = client.stream.bind(client);
  jest.spyOn(client, 'stream').mockImplementation((path, init = {}) => {
    const call: WatchCall = { openedAt: Date.now() };
    calls.push(call);
    init.signal?.addEventListener('abort', () => (call.abortedAt = Date.now()), { once: true });
    const answer = stream(path, init);
    answer.then(
      () => (call.answeredAt = Date.now()),
      () => undefined,
    );
    return answer;
  });
  return calls;
}

/** Milliseconds between consecutive watch requests. */
const gaps = (calls: WatchCall[]): number[] =>
  calls.slice(1).map((call, i) => call.openedAt - calls[i]!.openedAt);

const relists = (): number => metrics.counter('watch_relists_total');
const reconnects = (): number => metrics.counter('watch_reconnects_total');
const errors = (): number => metrics.counter('watch_errors_total');
const skipped = (): number => metrics.counter('watch_skipped_lines_total');

describe('the initial listing', () => {
  test('is paginated with limit and continue, emits each object once as ADDED then SYNCED, then watches from its resourceVersion', async () => {
    api.listPage([widget('a', '7'), widget('b', '8')], {
      resourceVersion: '10',
      continue: 'page-2',
    });
    api.listPage([widget('c', '9')], { resourceVersion: '10' });
    api.watchStream();

    const stream = watch({ pageSize: 2 });
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });

    expect(api.lists.map((r) => [r.query.get('limit'), r.query.get('continue')])).toEqual([
      ['2', null],
      ['2', 'page-2'],
    ]);
    expect(stream.summary).toEqual([
      'ADDED a@7 (list)',
      'ADDED b@8 (list)',
      'ADDED c@9 (list)',
      'SYNCED',
    ]);
    const query = api.watches[0]!.query;
    expect(query.get('resourceVersion')).toBe('10');
    expect(query.get('allowWatchBookmarks')).toBe('true');
    expect(query.get('timeoutSeconds')).toBe('300');
    expect(relists()).toBe(1);
  });

  test('without a pinned timeoutSeconds, each watch asks for a random whole number of seconds in [300, 600)', async () => {
    api.listPage([], { resourceVersion: '1' });
    for (let i = 0; i < 5; i++) api.watchLines();
    api.watchStream();

    watch({ timeoutSeconds: undefined });
    await waitFor(() => api.watches.length === 6, { what: 'six watch requests', ...quickly });

    const asked = api.watches.map((request) => Number(request.query.get('timeoutSeconds')));
    for (const seconds of asked) {
      expect(Number.isInteger(seconds)).toBe(true);
      expect(seconds).toBeGreaterThanOrEqual(300);
      expect(seconds).toBeLessThan(600);
    }
    expect(new Set(asked).size).toBeGreaterThan(1);
  });

  test('sends the label and field selectors on both the list and the watch', async () => {
    api.listPage([], { resourceVersion: '1' });
    api.watchStream();

    watch({ labelSelector: 'app=web', fieldSelector: 'metadata.namespace=default' });
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });

    for (const request of [api.lists[0]!, api.watches[0]!]) {
      expect(request.query.get('labelSelector')).toBe('app=web');
      expect(request.query.get('fieldSelector')).toBe('metadata.namespace=default');
    }
  });

  test('a list response without metadata.resourceVersion is an error: nothing is emitted for it and the listing is retried', async () => {
    api.listPage([widget('a', '1')], {});
    api.listPage([widget('a', '1')], { resourceVersion: '1' });
    api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });

    expect(api.lists).toHaveLength(2);
    expect(stream.summary).toEqual(['ADDED a@1 (list)', 'SYNCED']);
    expect(errors()).toBe(1);
  });

  test('an expired continue token (410 on a later page) restarts the listing, and nothing is emitted twice', async () => {
    api.listPage([widget('a', '1')], { resourceVersion: '5', continue: 'old-token' });
    api.listFails(410, status(410, 'Expired', 'The provided continue parameter is too old'));
    api.listPage([widget('a', '1')], { resourceVersion: '6', continue: 'new-token' });
    api.listPage([widget('b', '6')], { resourceVersion: '6' });
    api.watchStream();

    const stream = watch({ pageSize: 1 });
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });

    expect(api.lists.map((r) => r.query.get('continue'))).toEqual([
      null,
      'old-token',
      null,
      'new-token',
    ]);
    expect(stream.summary).toEqual(['ADDED a@1 (list)', 'ADDED b@6 (list)', 'SYNCED']);
    expect(api.watches[0]!.query.get('resourceVersion')).toBe('6');
  });

  test('a 410 on the listing itself is retried like any other error, not as a relist loop', async () => {
    api.listFails(410, status(410, 'Gone'));
    api.listPage([widget('a', '1')], { resourceVersion: '3' });
    api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });

    expect(stream.summary).toEqual(['ADDED a@1 (list)', 'SYNCED']);
    expect(errors()).toBe(1);
    expect(reconnects()).toBe(0);
  });
});

describe('a first listing from the API server’s cache', () => {
  test('is asked for at resourceVersion 0; a relist after the watch expired is a consistent read', async () => {
    api.listPage([widget('a', '1')], { resourceVersion: '1' });
    api.watchLines(line('ERROR', status(410, 'Expired', 'too old resource version: 1 (5)')));
    api.listPage([widget('a', '1')], { resourceVersion: '8' });
    api.watchStream();

    watch({ firstListFromCache: true });
    await waitFor(() => api.watches.length === 2, {
      what: 'the watch after the relist',
      ...quickly,
    });

    expect(api.lists.map((list) => list.query.get('resourceVersion'))).toEqual(['0', null]);
  });
});

describe('the watch', () => {
  test('emits live ADDED, MODIFIED and DELETED events', async () => {
    api.listPage([], { resourceVersion: '1' });
    const body = api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });
    body.write(line('ADDED', widget('a', '2')));
    body.write(line('MODIFIED', widget('a', '3')));
    body.write(line('DELETED', widget('a', '4')));
    await waitFor(() => stream.events.length === 4, { what: 'three live events', ...quickly });

    expect(stream.summary).toEqual(['SYNCED', 'ADDED a@2', 'MODIFIED a@3', 'DELETED a@4']);
  });

  test('a BOOKMARK advances the resourceVersion: the next watch resumes from it without relisting', async () => {
    api.listPage([], { resourceVersion: '1' });
    api.watchLines(
      line('BOOKMARK', {
        kind: 'Widget',
        apiVersion: WIDGET_API_VERSION,
        metadata: { resourceVersion: '42' },
      }),
    );
    api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 2, { what: 'the second watch request', ...quickly });

    expect(api.watches.map((r) => r.query.get('resourceVersion'))).toEqual(['1', '42']);
    expect(stream.summary).toEqual(['SYNCED']);
    expect(relists()).toBe(1);
  });

  test('malformed JSON is skipped and the next event on the same stream is still delivered', async () => {
    api.listPage([], { resourceVersion: '1' });
    const body = api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });
    body.write('{"type":"ADDED","object":{not json\n');
    body.write(line('ADDED', widget('a', '2')));
    await waitFor(() => stream.events.length === 2, {
      what: 'the event after the bad line',
      ...quickly,
    });

    expect(stream.summary).toEqual(['SYNCED', 'ADDED a@2']);
    expect(skipped()).toBe(1);
    expect(api.watches).toHaveLength(1);
  });

  test('an object without uid/resourceVersion and an unknown event type are skipped without ending the stream', async () => {
    api.listPage([], { resourceVersion: '1' });
    const body = api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });
    body.write(line('ADDED', { kind: 'Widget', metadata: { name: 'anonymous' } }));
    body.write(line('RESIZED', widget('b', '2')));
    body.write(line('ADDED', widget('a', '3')));
    await waitFor(() => stream.events.length === 2, {
      what: 'the event after the skipped ones',
      ...quickly,
    });

    expect(stream.summary).toEqual(['SYNCED', 'ADDED a@3']);
    expect(skipped()).toBe(2);
    expect(api.watches).toHaveLength(1);
    expect(reconnects()).toBe(0);
  });
});

describe('410 Gone on the watch', () => {
  /** The listing seen at first, and the one after the resourceVersion expired. */
  function scriptRelist(): void {
    api.listPage([widget('kept', '1'), widget('vanished', '1'), widget('changed', '1')], {
      resourceVersion: '1',
    });
  }
  function secondListing(): void {
    api.listPage([widget('kept', '1'), widget('changed', '7')], { resourceVersion: '8' });
  }
  const afterRelist = ['MODIFIED changed@7 (list)', 'DELETED vanished@1 (list)', 'SYNCED'];

  test('as an ERROR event, relists and emits only the differences', async () => {
    scriptRelist();
    api.watchLines(line('ERROR', status(410, 'Expired', 'too old resource version: 1 (5)')));
    secondListing();
    api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 2, {
      what: 'the watch after the relist',
      ...quickly,
    });

    expect(stream.summary.slice(4)).toEqual(afterRelist);
    expect(stream.syncs).toBe(2);
    expect(relists()).toBe(2);
    expect(api.watches[1]!.query.get('resourceVersion')).toBe('8');
  });

  test('as the HTTP status of the watch request, relists and emits only the differences', async () => {
    scriptRelist();
    api.watchFails(410, status(410, 'Expired', 'too old resource version: 1 (5)'));
    secondListing();
    api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 2, {
      what: 'the watch after the relist',
      ...quickly,
    });

    expect(stream.summary.slice(4)).toEqual(afterRelist);
    expect(stream.syncs).toBe(2);
    expect(relists()).toBe(2);
    expect(api.watches[1]!.query.get('resourceVersion')).toBe('8');
  });
});

describe('failures that keep the resourceVersion', () => {
  test('429 with Retry-After: the next watch waits that long, and nothing is relisted', async () => {
    const clock = installFakeClock();
    const calls = recordWatchCalls();
    api.listPage([], { resourceVersion: '1' });
    api.watchFails(429, status(429, 'TooManyRequests'), { 'Retry-After': '1' });
    api.watchStream();

    watch();
    await clock.until(() => errors() === 1, 'the 429 to be handled');
    await clock.advanceAsync(999);
    expect(calls).toHaveLength(1);
    await clock.advanceAsync(1);
    expect(gaps(calls)).toEqual([1_000]);

    await clock.until(() => api.watches.length === 2, 'the retried watch');
    expect(api.watches[1]!.query.get('resourceVersion')).toBe('1');
    expect(relists()).toBe(1);
  });

  test('500 on the watch is retried with backoff, counted as an error, without relisting', async () => {
    api.listPage([], { resourceVersion: '1' });
    api.watchFails(500, status(500, 'InternalError'));
    api.watchStream();

    watch();
    await waitFor(() => api.watches.length === 2, { what: 'the retried watch', ...quickly });

    expect(api.watches[1]!.query.get('resourceVersion')).toBe('1');
    expect(errors()).toBe(1);
    expect(relists()).toBe(1);
  });

  test('a refused connection is retried with backoff without relisting', async () => {
    api.listPage([], { resourceVersion: '1' });
    api.watchNetworkError('ECONNREFUSED');
    api.watchStream();

    watch();
    await waitFor(() => api.watches.length === 2, { what: 'the retried watch', ...quickly });

    expect(api.watches[1]!.query.get('resourceVersion')).toBe('1');
    expect(errors()).toBe(1);
    expect(relists()).toBe(1);
  });

  test('a stream cut mid-way reconnects from the last resourceVersion without relisting', async () => {
    api.listPage([], { resourceVersion: '1' });
    const body = api.watchStream();
    api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });
    body.write(line('ADDED', widget('a', '2')));
    await waitFor(() => stream.events.length === 2, { what: 'the first event', ...quickly });
    body.destroy(new Error('connection reset by peer'));
    await waitFor(() => api.watches.length === 2, { what: 'the reconnected watch', ...quickly });

    expect(api.watches[1]!.query.get('resourceVersion')).toBe('2');
    expect(stream.summary).toEqual(['SYNCED', 'ADDED a@2']);
    expect(relists()).toBe(1);
  });

  test('a watch that never sends anything is replaced after idleTimeoutMs', async () => {
    const clock = installFakeClock();
    const calls = recordWatchCalls();
    api.listPage([], { resourceVersion: '1' });
    api.watchStream();
    api.watchStream();

    watch({ idleTimeoutMs: 200 });
    await clock.until(() => api.watches.length === 1, 'the watch request');
    await clock.advanceAsync(199);
    expect(calls[0]!.abortedAt).toBeUndefined();
    await clock.advanceAsync(1);
    expect(calls[0]!.abortedAt! - calls[0]!.openedAt).toBe(200);
    await clock.until(() => reconnects() === 1, 'the silent watch to be given up');
    await clock.advanceAsync(10); // the reconnect backoff (initialMs)
    await clock.until(() => api.watches.length === 2, 'the replacement watch');

    expect(gaps(calls)).toEqual([210]);
    expect(reconnects()).toBe(1);
    expect(relists()).toBe(1);
    expect(api.watches[1]!.query.get('resourceVersion')).toBe('1');
  });

  test('a watch that goes silent after an event is replaced after idleTimeoutMs, from that event', async () => {
    const clock = installFakeClock();
    const calls = recordWatchCalls();
    api.listPage([], { resourceVersion: '1' });
    const body = api.watchStream();
    api.watchStream();

    const stream = watch({ idleTimeoutMs: 200 });
    await clock.until(() => api.watches.length === 1, 'the watch request');
    await clock.advanceAsync(100);
    body.write(line('ADDED', widget('a', '2')));
    await clock.until(() => stream.events.length === 2, 'the event');
    await clock.advanceAsync(199); // the watchdog counts from the event, not from the request
    expect(calls[0]!.abortedAt).toBeUndefined();
    await clock.advanceAsync(1);
    expect(calls[0]!.abortedAt! - calls[0]!.openedAt).toBe(300);
    await clock.until(() => reconnects() === 1, 'the silent watch to be given up');
    await clock.advanceAsync(10);
    await clock.until(() => api.watches.length === 2, 'the replacement watch');

    expect(stream.summary).toEqual(['SYNCED', 'ADDED a@2']);
    expect(reconnects()).toBe(1);
    expect(relists()).toBe(1);
    expect(api.watches[1]!.query.get('resourceVersion')).toBe('2');
  });
});

describe('watch_reconnects_total', () => {
  test('counts a reconnect after a 500 on the watch', async () => {
    api.listPage([], { resourceVersion: '1' });
    api.watchFails(500, status(500, 'InternalError'));
    api.watchStream();

    watch();
    await waitFor(() => api.watches.length === 2, { what: 'the retried watch', ...quickly });

    expect(reconnects()).toBe(1);
  });

  test('counts a reconnect after a refused connection', async () => {
    api.listPage([], { resourceVersion: '1' });
    api.watchNetworkError('ECONNREFUSED');
    api.watchStream();

    watch();
    await waitFor(() => api.watches.length === 2, { what: 'the retried watch', ...quickly });

    expect(reconnects()).toBe(1);
  });

  test('counts a reconnect after a stream cut mid-way', async () => {
    api.listPage([], { resourceVersion: '1' });
    const body = api.watchStream();
    api.watchStream();

    const stream = watch();
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });
    body.write(line('ADDED', widget('a', '2')));
    await waitFor(() => stream.events.length === 2, { what: 'the first event', ...quickly });
    body.destroy(new Error('connection reset by peer'));
    await waitFor(() => api.watches.length === 2, { what: 'the reconnected watch', ...quickly });

    expect(reconnects()).toBe(1);
  });

  test('counts a reconnect after a 429 and after an in-stream ERROR event, once each', async () => {
    api.listPage([], { resourceVersion: '1' });
    api.watchFails(429, status(429, 'TooManyRequests'), { 'Retry-After': '0' });
    api.watchLines(line('ERROR', status(500, 'InternalError', 'etcd leader changed')));
    api.watchStream();

    watch();
    await waitFor(() => api.watches.length === 3, { what: 'the third watch', ...quickly });

    expect(reconnects()).toBe(2);
    expect(errors()).toBe(2);
  });

  test('does not count a failed listing as a reconnect: no watch was open', async () => {
    api.listFails(500, status(500, 'InternalError'));
    api.listPage([], { resourceVersion: '1' });
    api.watchStream();

    watch();
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });

    expect(errors()).toBe(1);
    expect(reconnects()).toBe(0);
  });
});

describe('reconnect backoff', () => {
  test('the delay between failed watches grows: initialMs 50, factor 2 gives 50, 100, 200, 400 ms', async () => {
    const clock = installFakeClock();
    const calls = recordWatchCalls();
    api.listPage([], { resourceVersion: '1' });
    for (let i = 0; i < 4; i++) api.watchFails(500, status(500, 'InternalError'));
    api.watchStream();

    watch({ backoff: { initialMs: 50, factor: 2, jitter: 0 } });
    for (const [i, delay] of [50, 100, 200, 400].entries()) {
      await clock.until(() => errors() === i + 1, `failure ${i + 1} to be handled`);
      await clock.advanceAsync(delay - 1);
      expect(calls).toHaveLength(i + 1);
      await clock.advanceAsync(1);
      expect(calls).toHaveLength(i + 2);
    }

    expect(gaps(calls)).toEqual([50, 100, 200, 400]);
  });

  test('after resetAfterMs without errors the delay starts over from initialMs', async () => {
    const clock = installFakeClock();
    const calls = recordWatchCalls();
    api.listPage([], { resourceVersion: '1' });
    for (let i = 0; i < 3; i++) api.watchFails(500, status(500, 'InternalError'));
    const healthy = api.watchStream();
    api.watchFails(500, status(500, 'InternalError'));
    api.watchStream();

    watch({ backoff: { initialMs: 50, factor: 2, jitter: 0, resetAfterMs: 300 } });
    for (const [i, delay] of [50, 100, 200].entries()) {
      await clock.until(() => errors() === i + 1, `failure ${i + 1} to be handled`);
      await clock.advanceAsync(delay);
    }
    await clock.until(() => api.watches.length === 4, 'the healthy watch');
    healthy.write(
      line('BOOKMARK', {
        kind: 'Widget',
        apiVersion: WIDGET_API_VERSION,
        metadata: { resourceVersion: '5' },
      }),
    );
    await clock.until(() => calls[3]?.answeredAt !== undefined, 'the healthy watch to be answered');
    await clock.advanceAsync(400); // error-free for longer than resetAfterMs
    // A cut watch that delivered no events backs off before the next one.
    healthy.destroy(new Error('connection reset by peer'));
    await clock.until(() => reconnects() === 4, 'the cut to be handled');
    // Without the reset the delay after the cut would be 400 ms; with it, 50 ms, then 100 ms again.
    await clock.advanceAsync(49);
    expect(calls).toHaveLength(4);
    await clock.advanceAsync(1);
    await clock.until(() => errors() === 4, 'the failure after the cut to be handled');
    await clock.advanceAsync(100);

    expect(gaps(calls)).toEqual([50, 100, 200, 400 + 50, 100]);
  });
});

describe('metadata.managedFields', () => {
  const managedFields = [
    {
      manager: 'kubectl',
      operation: 'Update',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:spec': { 'f:size': {} } },
    },
  ];
  function withManagedFields(object: KubeObject): KubeObject {
    return { ...object, metadata: { ...object.metadata, managedFields } };
  }
  const managedFieldsOf = (object: KubeObject | undefined): unknown =>
    object?.metadata?.managedFields;

  test('are removed by default from listed objects and watch events, and never kept in the store', async () => {
    const store = new Map<string, KubeObject>();
    api.listPage([withManagedFields(widget('a', '1'))], { resourceVersion: '1' });
    const body = api.watchStream();

    const stream = watch({ store });
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });
    body.write(line('ADDED', withManagedFields(widget('b', '2'))));
    body.write(line('MODIFIED', withManagedFields(widget('a', '3'))));
    await waitFor(() => stream.events.length === 4, { what: 'the live events', ...quickly });

    const objects = stream.events.flatMap((event) =>
      event.type === 'SYNCED' ? [] : [event.object],
    );
    expect(objects.map((object) => object.metadata?.name)).toEqual(['a', 'b', 'a']);
    expect(objects.map(managedFieldsOf)).toEqual([undefined, undefined, undefined]);
    expect([...store.values()].map(managedFieldsOf)).toEqual([undefined, undefined]);
  });

  test('are kept with `keepManagedFields: true`', async () => {
    api.listPage([withManagedFields(widget('a', '1'))], { resourceVersion: '1' });
    const body = api.watchStream();

    const stream = watch({ keepManagedFields: true });
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });
    body.write(line('ADDED', withManagedFields(widget('b', '2'))));
    await waitFor(() => stream.events.length === 3, { what: 'the live event', ...quickly });

    const objects = stream.events.flatMap((event) =>
      event.type === 'SYNCED' ? [] : [event.object],
    );
    expect(objects.map(managedFieldsOf)).toEqual([managedFields, managedFields]);
  });
});

describe('a listing the heap cannot hold', () => {
  const MB = 2 ** 20;
  const smallHeap = () => ({ limitBytes: 96 * MB, usedBytes: 20 * MB });

  test('fails the stream on its first page with the count and the settings to use, and lists and watches no further', async () => {
    api.listPage([widget('a', '1')], {
      resourceVersion: '1',
      continue: 'next',
      remainingItemCount: 999_999,
    });

    const stream = watch({ heapStatistics: smallHeap });
    await waitFor(() => stream.error !== undefined, { what: 'the stream to fail', ...quickly });
    await settle();

    expect(stream.error).toBeInstanceOf(MemoryBudgetError);
    expect((stream.error as Error).message).toMatch(
      /1,000,000 objects .* NODE_OPTIONS=--max-old-space-size=\d+ /,
    );
    expect(stream.summary).toEqual([]);
    expect(api.lists).toHaveLength(1);
    expect(api.watches).toHaveLength(0);
  });

  test('a relist is measured by the objects it adds to those the stream holds, not by its whole size', async () => {
    const store = new Map<string, KubeObject>();
    for (let i = 0; i < 50_000; i++)
      store.set(`uid-held-${i}`, widget(`held-${i}`, '1', `uid-held-${i}`));
    api.listPage([widget('held-0', '1', 'uid-held-0')], {
      resourceVersion: '2',
      continue: 'next',
      remainingItemCount: 49_999,
    });
    api.listPage([], { resourceVersion: '2' });
    api.watchStream();

    const stream = watch({ heapStatistics: smallHeap, store });
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });

    expect(stream.error).toBeUndefined();
  });

  test('is listed as usual when the check is turned off', async () => {
    api.listPage([widget('a', '1')], { resourceVersion: '1', remainingItemCount: 999_999 });
    api.watchStream();

    const stream = watch({ heapStatistics: smallHeap, memoryBudget: false });
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });

    expect(stream.error).toBeUndefined();
    expect(stream.summary).toEqual(['ADDED a@1 (list)', 'SYNCED']);
  });

  test('a listing that fits is delivered page by page as usual', async () => {
    api.listPage([widget('a', '1')], {
      resourceVersion: '2',
      continue: 'next',
      remainingItemCount: 1,
    });
    api.listPage([widget('b', '2')], { resourceVersion: '2' });
    api.watchStream();

    const stream = watch({ heapStatistics: smallHeap, pageSize: 1 });
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });

    expect(stream.summary).toEqual(['ADDED a@1 (list)', 'ADDED b@2 (list)', 'SYNCED']);
  });
});

describe('unsubscribing', () => {
  test('aborts the open watch request: nothing more is read and no further request is made', async () => {
    const store = new Map<string, KubeObject>();
    api.listPage([], { resourceVersion: '1' });
    const body = api.watchStream();
    api.watchStream();

    const stream = watch({ store });
    await waitFor(() => api.watches.length === 1, { what: 'the watch request', ...quickly });
    body.write(line('ADDED', widget('a', '2')));
    await waitFor(() => stream.events.length === 2, { what: 'the first event', ...quickly });
    stream.unsubscribe();
    body.write(line('ADDED', widget('b', '3')));
    await settle();

    expect([...store.values()].map((o) => o.metadata?.name)).toEqual(['a']);
    expect(api.requests).toHaveLength(2);
    expect(api.unmatched).toBe(0);
    expect(api.pending()).toHaveLength(1);
  });

  test('as the listing is delivered sends no watch request', async () => {
    api.listPage([widget('a', '1')], { resourceVersion: '1' });
    api.watchStream();

    const synced = await firstValueFrom(
      watchResource(client, widgets, options()).pipe(
        filter((e) => e.type === 'SYNCED'),
        take(1),
      ),
    );
    await settle();

    expect(synced).toEqual({ type: 'SYNCED' });
    expect(api.watches).toHaveLength(0);
    expect(api.unmatched).toBe(0);
  });
});

describe('what the stream does once a watch request ended', () => {
  test('410 Gone relists', () => expect(afterWatch('gone', 3, 60_000)).toBe('relist'));
  test('a silent connection backs off before reconnecting', () =>
    expect(afterWatch('stalled', 3, 60_000)).toBe('back off'));
  test('a watch that ended at once with nothing in it backs off (kubernetes#104171)', () =>
    expect(afterWatch('ended', 0, 999)).toBe('back off'));
  test('a watch that delivered events resumes at once', () =>
    expect(afterWatch('ended', 1, 10)).toBe('resume'));
  test('a long, quiet watch the server ended resumes at once', () =>
    expect(afterWatch('ended', 0, 1_000)).toBe('resume'));
});
