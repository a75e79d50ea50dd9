import { on, type ChangeContext } from '../../../src/framework/index.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;

describe('an operator restart', () => {
  const running: RunningOperator[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
  });

  test('runs changes made while it was down as updates, creates for new objects, and only resume handlers for unchanged ones', async () => {
    const { kc, namespace } = await widgetNamespace('restart');
    const calls: string[] = [];
    class Handlers {
      @on.create(API, 'widgets')
      async created({ name }: ChangeContext): Promise<void> {
        calls.push(`create ${name}`);
      }

      @on.update(API, 'widgets')
      async updated({ name, diff }: ChangeContext): Promise<void> {
        calls.push(`update ${name} ${diff.map((d) => d.path.join('.')).join(',')}`);
      }

      @on.resume(API, 'widgets')
      async resumed({ name }: ChangeContext): Promise<void> {
        calls.push(`resume ${name}`);
      }
    }
    const widgets = new Widgets(kc, namespace);
    const first = await startOperator(kc, namespace, [Handlers]);
    await widgets.create('steady', { size: 1 });
    await widgets.create('changed', { size: 1 });
    await waitFor(() => calls.length === 2, { what: 'both creates' });
    await new Promise((resolve) => setTimeout(resolve, 500)); // let the diff-base writes land
    await first.stop();

    calls.length = 0;
    await widgets.patchSpec('changed', { size: 5 });
    await widgets.create('fresh', { size: 1 });
    running.push(await startOperator(kc, namespace, [Handlers]));
    await waitFor(() => calls.length >= 4, { what: 'the restarted operator to catch up' });
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // room for anything extra

    expect(calls.sort()).toEqual([
      'create fresh',
      'resume changed',
      'resume steady',
      'update changed spec.size',
    ]);
  });
});
