import { runEventHandlers } from '../../../src/framework/processing/event-handlers.js';
import { PRESENT, ABSENT } from '../../../src/framework/intents/filters.js';
import { ObjectMemos } from '../../../src/framework/intents/memo.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import type {
  EventContext,
  EventHandlerSpec,
} from '../../../src/framework/intents/handler-specs.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import type { ObjectEvent } from '../../../src/framework/watching/watch-events.js';
import {
  processBatch,
  type Route,
  type RouteServices,
} from '../../../src/framework/runtime/route.js';
import { WIDGET_API_VERSION, widgetEvent, widgetResource } from '../../support/widget-objects.js';
import { makeClient } from '../watching/fake-api.js';

function eventHandler(
  id: string,
  fn: EventHandlerSpec['fn'],
  options: EventHandlerSpec['options'] = {},
): EventHandlerSpec {
  return {
    kind: 'event',
    id,
    resource: { apiVersion: WIDGET_API_VERSION, name: widgetResource.plural },
    options,
    fn,
  };
}

const named = (type: ObjectEvent['type'], name?: string): ObjectEvent<KubeObject> =>
  widgetEvent({ status: name === undefined ? {} : { name } }, { type });

describe('@on.event field and value filters, and the memo', () => {
  const client = makeClient();
  afterAll(() => client.close());

  async function seen(
    options: EventHandlerSpec['options'],
    events: ObjectEvent<KubeObject>[],
  ): Promise<unknown[]> {
    const values: unknown[] = [];
    const handler = eventHandler('Audit.names', ({ status }) => values.push(status?.name), options);
    await runEventHandlers([handler], events, silentLogger(), new AbortController().signal, client);
    return values;
  }

  const events = [named('ADDED'), named('MODIFIED', 'Alice'), named('MODIFIED', 'Bob')];

  test('`field` alone runs the handler only when the field is present', async () => {
    expect(await seen({ field: 'status.name' }, events)).toEqual(['Alice', 'Bob']);
  });

  test('`value: PRESENT` and `value: ABSENT` test presence', async () => {
    expect(await seen({ field: 'status.name', value: PRESENT }, events)).toEqual(['Alice', 'Bob']);
    expect(await seen({ field: 'status.name', value: ABSENT }, events)).toEqual([undefined]);
  });

  test('an exact value or a predicate runs it only for matching values', async () => {
    expect(await seen({ field: 'status.name', value: 'Bob' }, events)).toEqual(['Bob']);
    expect(
      await seen({ field: 'status.name', value: (name) => String(name).startsWith('A') }, events),
    ).toEqual(['Alice']);
  });

  test('event handlers of an object share its memo, and its `when` filters read it', async () => {
    const memos = new ObjectMemos();
    const greeted: string[] = [];
    const handlers = [
      eventHandler(
        'Example.touched',
        ({ memo, status }) => (memo.last_name = status?.name as string | undefined),
        { field: 'status.name', value: PRESENT },
      ),
      eventHandler(
        'Example.greet',
        ({ memo }: EventContext) => greeted.push(`Hello, ${String(memo.last_name)}!`),
        { when: ({ memo }) => 'last_name' in memo },
      ),
    ];

    await runEventHandlers(
      handlers,
      events,
      silentLogger(),
      new AbortController().signal,
      client,
      undefined,
      undefined,
      { resource: widgetResource, memos },
    );

    expect(greeted).toEqual(['Hello, Alice!', 'Hello, Bob!']);
  });

  test("a DELETED event frees the object's memo once its handlers ran", async () => {
    const memos = new ObjectMemos();
    const route: Route = {
      resource: widgetResource,
      eventHandlers: [eventHandler('Example.touched', ({ memo }) => (memo.seen = true))],
      changes: undefined,
      timers: undefined,
      daemons: undefined,
    };
    const services = { client, logger: silentLogger(), memos } as unknown as RouteServices;
    const batch = (event: ObjectEvent<KubeObject>) => ({
      uid: 'uid-1',
      latest: event,
      events: [event],
      route,
      signal: new AbortController().signal,
    });

    await processBatch(batch(named('MODIFIED', 'Alice')), services);
    expect(memos.size).toBe(1);
    await processBatch(batch(named('DELETED', 'Alice')), services);
    await Promise.resolve();

    expect(memos.size).toBe(0);
  });
});
