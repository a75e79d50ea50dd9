import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { on, PermanentError, type ChangeContext } from '../../../src/framework/index.js';
import { DIFF_BASE_KEY, progressKey } from '../../../src/framework/state/keys.js';
import { sharedKubeConfig } from '../../support/cluster.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { Widgets, type Widget, getWidget, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;

/** core/v1 Events about one object, as `kubectl describe` would show them. */
async function eventsAbout(namespace: string, name: string): Promise<CoreV1Event[]> {
  const list = await sharedKubeConfig()
    .makeApiClient(CoreV1Api)
    .listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items;
}

function frameworkAnnotations(widget: Widget): string[] {
  return Object.keys(widget.metadata?.annotations ?? {}).filter((k) =>
    k.startsWith('konductor.dev/'),
  );
}

const settle = (ms = 500): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('error isolation', () => {
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  test('a PermanentError on one object does not delay handling of 100 others', async () => {
    const { kc, namespace } = await widgetNamespace('isolation');
    const handled = new Map<string, number>();
    let badAttempts = 0;
    class Handlers {
      @on.create(API, 'widgets')
      async created({ name }: ChangeContext): Promise<void> {
        if (name === 'bad') {
          badAttempts++;
          throw new PermanentError('bad is beyond repair');
        }
        handled.set(name, (handled.get(name) ?? 0) + 1);
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('bad');
    const started = Date.now();
    await widgets.createMany('good', 100);
    await waitFor(() => handled.size === 100, {
      what: 'all 100 good objects to be handled',
      timeoutMs: 30_000,
    });
    const elapsedMs = Date.now() - started;
    let failed: CoreV1Event | undefined;
    await waitFor(
      async () => {
        failed = (await eventsAbout(namespace, 'bad')).find((e) => e.reason === 'HandlerFailed');
        return failed !== undefined;
      },
      { what: "bad's HandlerFailed Event" },
    );
    await settle();

    expect(elapsedMs).toBeLessThan(30_000);
    expect([...handled.values()].every((count) => count === 1)).toBe(true);
    expect(badAttempts).toBe(1);
    expect(failed?.type).toBe('Warning');
    expect(failed?.message).toContain('bad is beyond repair');
    // The failure is final: the change counts as handled (diff-base stored), so it is not retried until
    // the object changes again; its record stays on the object with the message.
    const bad = await getWidget(namespace, 'bad');
    expect(bad.metadata?.annotations?.[DIFF_BASE_KEY]).toBeDefined();
    expect(JSON.parse(bad.metadata?.annotations?.[progressKey('created')] ?? '{}')).toMatchObject({
      failure: true,
    });
  });

  test('a spec the handler rejects with PermanentError gets a Warning Event with the error; later objects are still handled', async () => {
    const { kc, namespace } = await widgetNamespace('invalid-spec');
    const accepted: string[] = [];
    const rejected: string[] = [];
    class Handlers {
      @on.create(API, 'widgets')
      async created({ name, spec }: ChangeContext<{ size?: number }>): Promise<void> {
        const size = spec.size ?? 0;
        if (size > 9) {
          rejected.push(name);
          throw new PermanentError(`spec.size must be <= 9, got ${size}`);
        }
        accepted.push(name);
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('too-big', { size: 42 });

    let failed: CoreV1Event | undefined;
    await waitFor(
      async () => {
        failed = (await eventsAbout(namespace, 'too-big')).find(
          (e) => e.reason === 'HandlerFailed',
        );
        return failed !== undefined;
      },
      { what: 'a HandlerFailed Event about too-big' },
    );
    expect(failed?.type).toBe('Warning');
    expect(failed?.message).toContain('spec.size must be <= 9, got 42');
    expect(failed?.involvedObject.kind).toBe('Widget');
    // Handled for good: the diff-base is stored, and the failure stays in the progress record for users.
    await waitFor(
      async () =>
        (await getWidget(namespace, 'too-big')).metadata?.annotations?.[DIFF_BASE_KEY] !==
        undefined,
      { what: 'too-big to count as handled' },
    );
    const record = JSON.parse(
      (await getWidget(namespace, 'too-big')).metadata?.annotations?.[progressKey('created')] ??
        '{}',
    ) as Record<string, unknown>;
    expect(record).toMatchObject({ failure: true, message: 'spec.size must be <= 9, got 42' });

    await widgets.create('fine', { size: 3 });
    await waitFor(() => accepted.includes('fine'), { what: 'the next object to be handled' });
    await settle();
    expect(accepted).toEqual(['fine']);
    expect(rejected).toEqual(['too-big']);
  });

  test('a plain Error is retried after its backoff, with a HandlerRetrying Event, and succeeds on the second attempt', async () => {
    const { kc, namespace } = await widgetNamespace('plain-error');
    const attempts: number[] = [];
    class Handlers {
      @on.create(API, 'widgets', { backoff: 1 })
      async created({ retry }: ChangeContext): Promise<void> {
        attempts.push(retry);
        if (retry === 0) throw new Error('database not reachable');
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    await new Widgets(kc, namespace).create('flaky');

    const seen = new Set<string>();
    await waitFor(
      async () => {
        const raw = (await getWidget(namespace, 'flaky')).metadata?.annotations?.[
          progressKey('created')
        ];
        if (raw !== undefined) seen.add(raw);
        return attempts.length >= 2;
      },
      { what: 'the second attempt' },
    );
    let retrying: CoreV1Event | undefined;
    await waitFor(
      async () => {
        retrying = (await eventsAbout(namespace, 'flaky')).find(
          (e) => e.reason === 'HandlerRetrying',
        );
        return retrying !== undefined;
      },
      { what: 'a HandlerRetrying Event about flaky' },
    );
    expect(retrying?.type).toBe('Warning');
    expect(retrying?.message).toContain('database not reachable');
    await waitFor(
      async () => {
        const widget = await getWidget(namespace, 'flaky');
        return (
          widget.metadata?.annotations?.[progressKey('created')] === undefined &&
          widget.metadata?.annotations?.[DIFF_BASE_KEY] !== undefined
        );
      },
      { what: 'the progress record to be cleared' },
    );
    await settle();

    expect(attempts).toEqual([0, 1]);
    // While the retry was pending (1 s), the progress record carried the error.
    expect([...seen].some((raw) => raw.includes('database not reachable'))).toBe(true);
    expect(frameworkAnnotations(await getWidget(namespace, 'flaky'))).toEqual([DIFF_BASE_KEY]);
    expect((await eventsAbout(namespace, 'flaky')).some((e) => e.reason === 'HandlerFailed')).toBe(
      false,
    );
  });
});
