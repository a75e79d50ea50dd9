import {
  createOperator,
  on,
  silentLogger,
  type EventContext,
  type Operator,
} from '../../../src/framework/index.js';
import { Widgets, type Widget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

describe('@on.event handlers', () => {
  let operator: Operator | undefined;
  afterEach(async () => {
    await operator?.stop(1_000);
    operator = undefined;
  });

  test('receive every raw event of an object, in order', async () => {
    const { kc, namespace } = await widgetNamespace('event');
    const seen: string[] = [];
    class Recorder {
      @on.event('test.konductor.dev/v1', 'widgets')
      record({ type, body }: EventContext<Widget>): void {
        seen.push(`${type} size=${body.spec?.size}`);
      }
    }
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Recorder],
      namespaces: [namespace],
      logger: silentLogger(),
    }).start();
    await operator.ready;

    const widgets = new Widgets(kc, namespace);
    await widgets.create('w', { size: 1 });
    await waitFor(() => seen.length === 1, { what: 'the ADDED event' });
    await widgets.patchSpec('w', { size: 2 });
    await waitFor(() => seen.length === 2, { what: 'the MODIFIED event' });
    await widgets.delete('w');
    await waitFor(() => seen.length === 3, { what: 'the DELETED event' });

    expect(seen).toEqual(['ADDED size=1', 'MODIFIED size=2', 'DELETED size=2']);
  });

  test('that throw are logged and ignored: later events still reach every handler', async () => {
    const { kc, namespace } = await widgetNamespace('event-err');
    const calm: string[] = [];
    let failures = 0;
    class Handlers {
      @on.event('test.konductor.dev/v1', 'Widget')
      explode(): void {
        failures += 1;
        throw new Error('handler bug');
      }

      @on.event('test.konductor.dev/v1', 'wg')
      keepCalm({ type, name }: EventContext): void {
        calm.push(`${type} ${name}`);
      }
    }
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Handlers],
      namespaces: [namespace],
      logger: silentLogger(),
    }).start();
    await operator.ready;

    const widgets = new Widgets(kc, namespace);
    await widgets.create('a');
    await widgets.create('b');
    await waitFor(() => calm.length === 2, { what: 'both objects to reach the calm handler' });

    expect(calm.sort()).toEqual(['ADDED a', 'ADDED b']);
    expect(failures).toBe(2);
  });

  test('get only objects matching their label selector, filtered by the API server', async () => {
    const { kc, namespace } = await widgetNamespace('event-sel');
    const seen: string[] = [];
    class Selective {
      @on.event('test.konductor.dev/v1', 'widgets', { labelSelector: 'tier=gold' })
      record({ name }: EventContext): void {
        seen.push(name);
      }
    }
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Selective],
      namespaces: [namespace],
      logger: silentLogger(),
    }).start();
    await operator.ready;

    const widgets = new Widgets(kc, namespace);
    await widgets.createLabelled('plain', {});
    await widgets.createLabelled('gold', { tier: 'gold' });
    await waitFor(() => seen.length === 1, { what: 'the gold widget' });
    await new Promise((resolve) => setTimeout(resolve, 500));

    expect(seen).toEqual(['gold']);
  });
});
