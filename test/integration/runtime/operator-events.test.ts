import { CoreV1Api, type CoreV1Event, type KubeConfig } from '@kubernetes/client-node';
import { events, on, type ChangeContext } from '../../../src/framework/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';
import { installWidgetCrd, WIDGET_API_VERSION, Widgets } from '../../support/widgets.js';
import { type HandlerClass } from '../../../src/framework/registry/registry.js';

/** Handlers that announce each new widget twice: through their context and through the free function. */
function announcing(): HandlerClass {
  class Announcer {
    @on.create(WIDGET_API_VERSION, 'widgets')
    created(ctx: ChangeContext): void {
      ctx.events.info('ViaContext', `ctx.events about ${ctx.name}`);
      events.info(ctx.body, 'ViaFunction', `events.info about ${ctx.name}`);
    }
  }
  return Announcer;
}

/** `reason object <- component` of every Event in the namespace, sorted. */
async function eventsIn(kc: KubeConfig, namespace: string): Promise<string[]> {
  const { items } = await kc.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace });
  return items
    .map((e: CoreV1Event) => `${e.reason} ${e.involvedObject.name} <- ${e.source?.component}`)
    .sort();
}

describe('Events belong to the operator that handles the object', () => {
  const running: TestOperator[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((operator) => operator.stop()));
  });

  test('two operators in one process each post their own Events, and stopping one leaves the other posting', async () => {
    const kc = sharedKubeConfig();
    await installWidgetCrd(kc);
    const [first, second] = [
      await uniqueNamespace(kc, 'events-a'),
      await uniqueNamespace(kc, 'events-b'),
    ];
    const operatorA = await runOperator({
      kubeConfig: kc,
      handlers: [announcing()],
      namespaces: [first],
      eventSource: 'operator-a',
    });
    const operatorB = await runOperator({
      kubeConfig: kc,
      handlers: [announcing()],
      namespaces: [second],
      eventSource: 'operator-b',
    });
    running.push(operatorA, operatorB);

    await new Widgets(kc, first).create('one');
    await new Widgets(kc, second).create('two');
    const expectedA = ['ViaContext one <- operator-a', 'ViaFunction one <- operator-a'];
    const expectedB = ['ViaContext two <- operator-b', 'ViaFunction two <- operator-b'];
    await waitFor(
      async () =>
        (await eventsIn(kc, first)).length >= 2 && (await eventsIn(kc, second)).length >= 2,
      { what: 'both operators’ Events' },
    );
    expect(await eventsIn(kc, first)).toEqual(expectedA);
    expect(await eventsIn(kc, second)).toEqual(expectedB);

    await running.shift()!.stop();
    await new Widgets(kc, second).create('three');
    await waitFor(async () => (await eventsIn(kc, second)).length >= 4, {
      what: 'the second operator’s Events after the first stopped',
    });
    expect(await eventsIn(kc, second)).toEqual(
      [...expectedB, 'ViaContext three <- operator-b', 'ViaFunction three <- operator-b'].sort(),
    );
    expect(await eventsIn(kc, first)).toEqual(expectedA);
  }, 60_000);
});
