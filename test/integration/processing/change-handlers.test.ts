import { CoreV1Api } from '@kubernetes/client-node';
import { events, on, type ChangeContext, type Diff } from '../../../src/framework/index.js';
import { DIFF_BASE_KEY } from '../../../src/framework/state/keys.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { Widgets, type Widget, getWidget, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;
interface WidgetSpec {
  size?: number;
  color?: string;
}

function frameworkAnnotations(widget: Widget): string[] {
  return Object.keys(widget.metadata?.annotations ?? {}).filter(
    (k) => k.startsWith('konductor.dev/') && k !== DIFF_BASE_KEY,
  );
}

describe('change handlers', () => {
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  test('a create handler runs once per object, and its status patch is written', async () => {
    const { kc, namespace } = await widgetNamespace('create');
    const created: string[] = [];
    class Handlers {
      @on.create(API, 'widgets')
      async created({ name, patch }: ChangeContext<WidgetSpec>): Promise<void> {
        created.push(name);
        patch.status.phase = 'Ready';
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    await new Widgets(kc, namespace).create('one');
    await waitFor(async () => (await getWidget(namespace, 'one')).status?.phase === 'Ready', {
      what: 'status.phase',
    });
    await new Promise((resolve) => setTimeout(resolve, 500)); // room for a duplicate run to show up
    const widget = await getWidget(namespace, 'one');

    expect(created).toEqual(['one']);
    expect(widget.status?.phase).toBe('Ready');
    expect(widget.metadata?.annotations?.[DIFF_BASE_KEY]).toBeDefined();
    expect(frameworkAnnotations(widget)).toEqual([]);
  });

  test('update and field handlers run once per change with old, new and diff narrowed to their field', async () => {
    const { kc, namespace } = await widgetNamespace('update');
    const updates: Array<{ old: unknown; new: unknown; diff: Diff }> = [];
    const sizes: Array<{ old: unknown; new: unknown; diff: Diff }> = [];
    class Handlers {
      @on.create(API, 'widgets')
      async created(): Promise<void> {}

      @on.update(API, 'widgets')
      async updated({ old, new: current, diff }: ChangeContext): Promise<void> {
        updates.push({ old, new: current, diff });
      }

      @on.field(API, 'widgets', 'spec.size')
      async resized({ old, new: current, diff }: ChangeContext): Promise<void> {
        sizes.push({ old, new: current, diff });
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('w', { size: 1, color: 'red' });
    await waitFor(
      async () => Boolean((await getWidget(namespace, 'w')).metadata?.annotations?.[DIFF_BASE_KEY]),
      { what: 'the create to be recorded' },
    );
    await widgets.patchSpec('w', { color: 'blue' });
    await waitFor(() => updates.length === 1, { what: 'the update for color' });
    await widgets.patchSpec('w', { size: 2 });
    await waitFor(() => updates.length === 2 && sizes.length === 1, {
      what: 'the update for size',
    });
    await new Promise((resolve) => setTimeout(resolve, 500));

    expect(updates).toHaveLength(2);
    expect(updates[0]!.diff).toEqual([
      { op: 'change', path: ['spec', 'color'], old: 'red', new: 'blue' },
    ]);
    expect(sizes).toEqual([{ old: 1, new: 2, diff: [{ op: 'change', path: [], old: 1, new: 2 }] }]);
  });

  test('events.info from a handler posts a Normal Event on the object without blocking the handler', async () => {
    const { kc, namespace } = await widgetNamespace('events');
    class Handlers {
      @on.create(API, 'widgets')
      async created({ body }: ChangeContext): Promise<void> {
        events.info(body, 'Provisioned', 'backend ready');
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    await new Widgets(kc, namespace).create('announced');
    const core = kc.makeApiClient(CoreV1Api);
    await waitFor(
      async () =>
        (
          await core.listNamespacedEvent({
            namespace,
            fieldSelector: 'involvedObject.name=announced',
          })
        ).items.some(
          (e) =>
            e.reason === 'Provisioned' &&
            e.type === 'Normal' &&
            e.message === 'backend ready' &&
            e.involvedObject.kind === 'Widget',
        ),
      { what: 'the Provisioned Event' },
    );
  });
});
