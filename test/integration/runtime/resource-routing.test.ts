import { setTimeout as sleep } from 'node:timers/promises';
import {
  createOperator,
  on,
  silentLogger,
  type ChangeContext,
  type EventContext,
  type Operator,
} from '../../../src/framework/index.js';
import { Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API_VERSION = WIDGET_API_VERSION;

describe('handlers of one resource share one watch and one route', () => {
  let operator: Operator | undefined;
  afterEach(async () => {
    await operator?.stop(2_000);
    operator = undefined;
  });

  test('handlers naming the resource by plural, kind and short name each fire exactly once per change', async () => {
    const { kc, namespace } = await widgetNamespace('names');
    const runs: string[] = [];
    const record = (by: string) => (context: ChangeContext) =>
      void runs.push(
        `${by} ${context.reason} ${context.name} ${JSON.stringify(context.new ?? null)}`,
      );
    const events: string[] = [];

    class ByPlural {
      @on.create(API_VERSION, 'widgets')
      created(context: ChangeContext): void {
        record('plural')(context);
      }
      @on.update(API_VERSION, 'widgets', { field: 'spec.size' })
      resized(context: ChangeContext): void {
        record('plural')(context);
      }
    }
    class ByKind {
      @on.create(API_VERSION, 'Widget')
      kindCreated(context: ChangeContext): void {
        record('kind')(context);
      }
      @on.update(API_VERSION, 'Widget', { field: 'spec.size' })
      kindResized(context: ChangeContext): void {
        record('kind')(context);
      }
    }
    class ByShortName {
      @on.create(API_VERSION, 'wg')
      shortCreated(context: ChangeContext): void {
        record('short')(context);
      }
      @on.update(API_VERSION, 'wg', { field: 'spec.size' })
      shortResized(context: ChangeContext): void {
        record('short')(context);
      }
      @on.event(API_VERSION, 'wg')
      observed({ type, body }: EventContext): void {
        events.push(`${type} ${body.metadata?.name}`);
      }
    }

    operator = createOperator({
      kubeConfig: kc,
      handlers: [ByPlural, ByKind, ByShortName],
      namespaces: [namespace],
      logger: silentLogger(),
    }).start();
    await operator.ready;
    const widgets = new Widgets(kc, namespace);
    const count = (suffix: string): number => runs.filter((run) => run.endsWith(suffix)).length;

    await widgets.create('w', { size: 1 });
    await waitFor(() => count('create w null') === 3, { what: 'the three create handlers' });
    for (const size of [2, 3]) {
      await widgets.patchSpec('w', { size });
      await waitFor(() => count(`update w ${size}`) === 3, {
        what: `the three update handlers to see size ${size}`,
      });
    }
    await sleep(1_500); // nothing more may follow

    expect([...runs].sort()).toEqual(
      ['plural', 'kind', 'short']
        .flatMap((by) => [`${by} create w null`, `${by} update w 2`, `${by} update w 3`])
        .sort(),
    );
    expect(events.filter((event) => event === 'ADDED w')).toHaveLength(1);
  }, 60_000);

  test('handlers with different label selectors each see only their objects, and no update is lost', async () => {
    // Red and Blue select with labels; All takes every widget, so red-1 and blue-1 each feed two of them.
    const { kc, namespace } = await widgetNamespace('selectors');
    const seen: Array<{ handler: string; reason: string; name: string; size: unknown }> = [];
    const record = (handler: string) => (context: ChangeContext) =>
      void seen.push({
        handler,
        reason: context.reason,
        name: context.name,
        size: context.spec.size,
      });

    class Red {
      @on.create(API_VERSION, 'widgets', { labelSelector: 'color=red' })
      created(context: ChangeContext): void {
        record('red')(context);
      }
      @on.update(API_VERSION, 'widgets', { labelSelector: 'color=red', field: 'spec.size' })
      resized(context: ChangeContext): void {
        record('red')(context);
      }
    }
    class Blue {
      @on.create(API_VERSION, 'Widget', { labelSelector: 'color in (blue)' })
      blueCreated(context: ChangeContext): void {
        record('blue')(context);
      }
      @on.update(API_VERSION, 'Widget', { labelSelector: 'color in (blue)', field: 'spec.size' })
      blueResized(context: ChangeContext): void {
        record('blue')(context);
      }
    }

    class All {
      @on.create(API_VERSION, 'wg')
      allCreated(context: ChangeContext): void {
        record('all')(context);
      }
      @on.update(API_VERSION, 'wg', { field: 'spec.size' })
      allResized(context: ChangeContext): void {
        record('all')(context);
      }
    }

    operator = createOperator({
      kubeConfig: kc,
      handlers: [Red, Blue, All],
      namespaces: [namespace],
      logger: silentLogger(),
    }).start();
    await operator.ready;
    const widgets = new Widgets(kc, namespace);
    await Promise.all([
      widgets.createLabelled('red-1', { color: 'red' }),
      widgets.createLabelled('blue-1', { color: 'blue' }),
      widgets.createLabelled('green-1', { color: 'green' }),
    ]);
    const lastSize = (handler: string, name: string): unknown =>
      seen.filter((s) => s.handler === handler && s.name === name).at(-1)?.size;
    const allSee = (size: number): boolean =>
      lastSize('red', 'red-1') === size &&
      lastSize('blue', 'blue-1') === size &&
      ['red-1', 'blue-1', 'green-1'].every((name) => lastSize('all', name) === size);
    await waitFor(() => allSee(1), { what: 'every create handler' });

    // Both objects change at the same moment, round after round: each handler must see every round.
    for (const size of [2, 3, 4]) {
      await Promise.all([
        widgets.patchSpec('red-1', { size }),
        widgets.patchSpec('blue-1', { size }),
        widgets.patchSpec('green-1', { size }),
      ]);
      await waitFor(() => allSee(size), { what: `every update handler to see size ${size}` });
    }
    await sleep(1_000);

    expect(
      seen.filter((s) => s.handler === 'red').map((s) => `${s.reason} ${s.name} ${String(s.size)}`),
    ).toEqual(['create red-1 1', 'update red-1 2', 'update red-1 3', 'update red-1 4']);
    expect(
      seen
        .filter((s) => s.handler === 'blue')
        .map((s) => `${s.reason} ${s.name} ${String(s.size)}`),
    ).toEqual(['create blue-1 1', 'update blue-1 2', 'update blue-1 3', 'update blue-1 4']);
    for (const name of ['red-1', 'blue-1', 'green-1']) {
      expect(
        seen
          .filter((s) => s.handler === 'all' && s.name === name)
          .map((s) => `${s.reason} ${String(s.size)}`),
      ).toEqual(['create 1', 'update 2', 'update 3', 'update 4']);
    }
  }, 60_000);
});
