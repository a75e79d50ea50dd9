import { on, TemporaryError, type ChangeContext } from '../../../src/framework/index.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { getWidget, Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;

describe('handler ids and stacked decorators (Kopf idioms)', () => {
  const running: RunningOperator[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
  });

  test('one method under @on.create, @on.resume and @on.update runs once per cause, and its result lands at status.<method>', async () => {
    const { kc, namespace } = await widgetNamespace('stacked');
    const calls: string[] = [];
    class Handlers {
      @on.create(API, 'widgets')
      @on.resume(API, 'widgets')
      @on.update(API, 'widgets')
      async ensure({
        name,
        reason,
        spec,
      }: ChangeContext<{ size: number }>): Promise<{ size: number }> {
        calls.push(`${reason} ${name}`);
        return { size: spec.size };
      }
    }
    const widgets = new Widgets(kc, namespace);
    const first = await startOperator(kc, namespace, [Handlers]);
    await widgets.create('w', { size: 1 });
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.ensure, {
      what: 'the result at status.ensure',
    });
    await widgets.patchSpec('w', { size: 2 });
    await waitFor(
      async () =>
        ((await getWidget(namespace, 'w')).status?.ensure as { size?: number } | undefined)
          ?.size === 2,
      { what: 'the update result' },
    );
    await first.stop();

    running.push(await startOperator(kc, namespace, [Handlers]));
    await waitFor(() => calls.length === 3, { what: 'the resume' });

    expect(calls).toEqual(['create w', 'update w', 'resume w']);
  });

  test('an upgrade from Class.method ids finds their progress: a finished handler does not run again', async () => {
    const { kc, namespace } = await widgetNamespace('legacy-ids');
    const calls: string[] = [];
    let secondFails = true;
    // The earlier release: its default ids were Class.method, as these explicit ones are.
    class Before {
      @on.create(API, 'widgets', { id: 'Upgrade.first' })
      first(): void {
        calls.push('first');
      }

      @on.create(API, 'widgets', { id: 'Upgrade.second' })
      second(): void {
        calls.push('second');
        if (secondFails) throw new TemporaryError('not yet', { delay: 2 });
      }
    }
    const widgets = new Widgets(kc, namespace);
    const before = await startOperator(kc, namespace, [Before]);
    await widgets.create('w');
    await waitFor(() => calls.length === 2, { what: 'both handlers, the second failing' });
    await waitFor(
      async () =>
        JSON.stringify((await getWidget(namespace, 'w')).metadata?.annotations ?? {}).includes(
          'Upgrade.second',
        ),
      { what: "the second's retry recorded" },
    );
    await before.stop();

    calls.length = 0;
    secondFails = false;
    class Upgrade {
      @on.create(API, 'widgets')
      first(): void {
        calls.push('first');
      }

      @on.create(API, 'widgets')
      second(): void {
        calls.push('second');
      }
    }
    const after = await startOperator(kc, namespace, [Upgrade]);
    running.push(after);

    const annotations = await waitFor(
      async () => {
        const current = (await getWidget(namespace, 'w')).metadata?.annotations ?? {};
        return Object.keys(current).some((key) => key.includes('last-handled')) &&
          !JSON.stringify(current).includes('Upgrade.')
          ? current
          : undefined;
      },
      { what: 'the create finished and the old records purged', timeoutMs: 30_000 },
    );
    expect(calls).toEqual(['second']);
    expect(Object.keys(annotations!).filter((key) => key.includes('Upgrade'))).toEqual([]);
  }, 60_000);
});
