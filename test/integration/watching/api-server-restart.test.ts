import type { Subscription } from 'rxjs';
import { CoreV1Api } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import type { ObjectEvent, WatchEvent } from '../../../src/framework/watching/watch-events.js';
import { watchResource } from '../../../src/framework/watching/watch-stream.js';
import { TestControlPlane } from '../../../src/testing/index.js';
import { installWidgetCrd, widgetResource, Widgets, type Widget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

// This test stops the API server, so it runs on a control plane of its own.
describe('a watch across an API server outage', () => {
  let plane: TestControlPlane;
  let client: ApiClient | undefined;
  let subscription: Subscription | undefined;

  beforeAll(async () => {
    plane = await TestControlPlane.start();
  });
  afterAll(async () => {
    subscription?.unsubscribe();
    client?.close();
    await plane.stop();
  });

  test('delivers every change made while the API server was down, once each and at its latest state, without a restart', async () => {
    const kc = plane.kubeConfig();
    await installWidgetCrd(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'outage' } } });
    const widgets = new Widgets(kc, 'outage');
    for (const name of ['kept', 'changed', 'removed']) await widgets.create(name, { size: 1 });

    client = new ApiClient(kc);
    const metrics = new MetricsRecorder();
    const events: WatchEvent<Widget>[] = [];
    // A short backoff cap keeps the test quick; the behaviour does not depend on it.
    subscription = watchResource<Widget>(client, widgetResource, {
      namespace: 'outage',
      metrics,
      backoff: { maxMs: 1_000 },
    }).subscribe((event) => events.push(event));
    await waitFor(() => events.some((e) => e.type === 'SYNCED'), { what: 'the initial listing' });
    const before = events.length;

    await plane.stopApiServer();
    const peer = await plane.startPeerApiServer();
    const viaPeer = new Widgets(peer.kubeConfig(), 'outage');
    await viaPeer.create('created', { size: 7 });
    await viaPeer.patchSpec('changed', { size: 2 });
    await viaPeer.patchSpec('changed', { size: 3 });
    await viaPeer.delete('removed');
    await peer.stop();
    await new Promise((resolve) => setTimeout(resolve, 5_000)); // the outage lasts at least 5 s in total
    await plane.startApiServer();

    const changes = (): ObjectEvent<Widget>[] =>
      events.slice(before).filter((e): e is ObjectEvent<Widget> => e.type !== 'SYNCED');
    await waitFor(() => changes().length >= 3, {
      what: 'the three changes to arrive',
      timeoutMs: 40_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // room for any duplicate to show up

    const summary = changes().map(
      (e) => `${e.type} ${e.object.metadata?.name} size=${e.object.spec?.size}`,
    );
    expect(summary.sort()).toEqual([
      'ADDED created size=7',
      'DELETED removed size=1',
      'MODIFIED changed size=3',
    ]);
    expect(metrics.counter('watch_reconnects_total')).toBeGreaterThan(0);
  });
});
