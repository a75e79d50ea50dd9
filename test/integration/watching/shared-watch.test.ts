import type { Subscription } from 'rxjs';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import type { ObjectEvent, WatchEvent } from '../../../src/framework/watching/watch-events.js';
import { WatchHub } from '../../../src/framework/watching/watch-hub.js';
import { widgetResource } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

describe('shared watches', () => {
  const subscriptions: Subscription[] = [];
  let client: ApiClient | undefined;
  afterEach(() => {
    subscriptions.splice(0).forEach((s) => s.unsubscribe());
    client?.close();
  });

  test('many subscribers to one resource and scope share one list and one watch, and a late one still sees every object', async () => {
    const { kc, namespace, widgets } = await widgetNamespace('shared');
    await widgets.createMany('w', 5);

    client = new ApiClient(kc);
    const requests: string[] = [];
    client.onRequest = (method) => requests.push(method);
    const hub = new WatchHub(client);
    const first: WatchEvent[] = [];
    const second: WatchEvent[] = [];
    subscriptions.push(hub.watch(widgetResource, { namespace }).subscribe((e) => first.push(e)));
    await waitFor(() => first.some((e) => e.type === 'SYNCED'), {
      what: 'the first subscriber to sync',
    });
    subscriptions.push(hub.watch(widgetResource, { namespace }).subscribe((e) => second.push(e)));
    await widgets.create('late');
    await waitFor(() => second.length === 7 && first.length === 7, {
      what: 'both subscribers to see the new object',
    });

    const names = (events: WatchEvent[]): string[] =>
      events
        .filter((e): e is ObjectEvent => e.type !== 'SYNCED')
        .map((e) => e.object.metadata?.name ?? '')
        .sort();
    expect(names(second)).toEqual(names(first));
    expect(names(second)).toHaveLength(6);
    expect(requests.filter((m) => m === 'GET')).toHaveLength(1);
    expect(requests.filter((m) => m === 'WATCH')).toHaveLength(1);
    expect(hub.openWatches).toBe(1);
  });

  test('the underlying watch stops when the last subscriber leaves', async () => {
    const { kc, namespace } = await widgetNamespace('shared-stop');
    client = new ApiClient(kc);
    const hub = new WatchHub(client);
    const synced: boolean[] = [];
    const a = hub
      .watch(widgetResource, { namespace })
      .subscribe((e) => e.type === 'SYNCED' && synced.push(true));
    const b = hub.watch(widgetResource, { namespace }).subscribe(() => undefined);
    await waitFor(() => synced.length === 1, { what: 'the listing' });
    a.unsubscribe();
    expect(hub.openWatches).toBe(1);
    b.unsubscribe();
    expect(hub.openWatches).toBe(0);
  });
});
