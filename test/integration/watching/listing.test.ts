import type { Subscription } from 'rxjs';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import type { WatchEvent } from '../../../src/framework/watching/watch-events.js';
import { watchResource } from '../../../src/framework/watching/watch-stream.js';
import { widgetResource, Widgets, type Widget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

describe('listing on a real API server', () => {
  let subscription: Subscription | undefined;
  let client: ApiClient | undefined;
  afterEach(() => {
    subscription?.unsubscribe();
    client?.close();
  });

  test('delivers 2,000 existing objects once each, fetched in pages, then marks the listing complete', async () => {
    const { kc, namespace } = await widgetNamespace('list');
    await new Widgets(kc, namespace).createMany('w', 2_000);

    client = new ApiClient(kc);
    const listRequests: string[] = [];
    client.onRequest = (method, path) => {
      if (method === 'GET' && path.endsWith('/widgets')) listRequests.push(path);
    };
    const events: WatchEvent<Widget>[] = [];
    subscription = watchResource<Widget>(client, widgetResource, {
      namespace,
      pageSize: 500,
      metrics: new MetricsRecorder(),
    }).subscribe((event) => events.push(event));
    await waitFor(() => events.some((e) => e.type === 'SYNCED'), {
      what: 'the listing to complete',
    });

    const beforeSync = events.slice(
      0,
      events.findIndex((e) => e.type === 'SYNCED'),
    );
    const uids = new Set(
      beforeSync.map((e) => (e.type === 'SYNCED' ? '' : e.object.metadata?.uid)),
    );
    expect(beforeSync).toHaveLength(2_000);
    expect(uids.size).toBe(2_000);
    expect(beforeSync.every((e) => e.type === 'ADDED')).toBe(true);
    expect(listRequests).toHaveLength(4);
  }, 300_000); // creating 2,000 objects takes minutes on a busy machine; the listing is what is checked
});
