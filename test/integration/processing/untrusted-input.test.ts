/**
 * Bad input on the real API server: forged bookkeeping, copied objects, and objects whose bookkeeping
 * the API server refuses to store. Each gets its own Warning Event, once, and never a loop.
 */
import { CoreV1Api, type CoreV1Event } from '@kubernetes/client-node';
import { on, type ChangeContext } from '../../../src/framework/index.js';
import { DIFF_BASE_KEY, progressKey } from '../../../src/framework/state/keys.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, writesTo, type RunningOperator } from '../../support/operators.js';
import { getWidget, installWidgetCrd, Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

const API = WIDGET_API_VERSION;

async function eventsAbout(
  namespace: string,
  name: string,
  reason: string,
): Promise<CoreV1Event[]> {
  const list = await sharedKubeConfig()
    .makeApiClient(CoreV1Api)
    .listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items.filter((event) => event.reason === reason);
}

const settle = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('untrusted input on the real API server', () => {
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  async function operatorCounting(
    prefix: string,
  ): Promise<{ namespace: string; widgets: Widgets; runs: Map<string, number> }> {
    const kc = sharedKubeConfig();
    await installWidgetCrd(kc);
    const namespace = await uniqueNamespace(kc, prefix);
    const runs = new Map<string, number>();
    class Handlers {
      @on.create(API, 'widgets')
      async created({ name }: ChangeContext): Promise<void> {
        runs.set(name, (runs.get(name) ?? 0) + 1);
      }
    }
    running = await startOperator(kc, namespace, [Handlers]);
    return { namespace, widgets: new Widgets(kc, namespace), runs };
  }

  test('a forged progress annotation gets one InvalidAnnotation Warning and the create handler runs once', async () => {
    const { namespace, widgets, runs } = await operatorCounting('forged-progress');
    const key = progressKey('created');

    await widgets.createFrom({
      metadata: { name: 'forged', annotations: { [key]: '{"started":"garbage","retries":"x"}' } },
      spec: { size: 1 },
    });

    await waitFor(
      async () =>
        (await getWidget(namespace, 'forged')).metadata?.annotations?.[DIFF_BASE_KEY] !== undefined,
      { what: 'the create to be handled' },
    );
    await waitFor(
      async () => (await eventsAbout(namespace, 'forged', 'InvalidAnnotation')).length > 0,
      { what: 'the InvalidAnnotation Event' },
    );
    await settle(1_000);
    const [event, ...more] = await eventsAbout(namespace, 'forged', 'InvalidAnnotation');
    expect(more).toHaveLength(0);
    expect(event?.type).toBe('Warning');
    expect(event?.message).toContain(key);
    expect(runs.get('forged')).toBe(1);
    expect((await getWidget(namespace, 'forged')).metadata?.annotations?.[key]).toBeUndefined();
  });

  test('a copy of a handled object (get -o yaml, re-created under another name) runs its create handler', async () => {
    const { namespace, widgets, runs } = await operatorCounting('copied');
    await widgets.create('original');
    await waitFor(
      async () =>
        (await getWidget(namespace, 'original')).metadata?.annotations?.[DIFF_BASE_KEY] !==
        undefined,
      { what: 'the original to be handled' },
    );

    const original = await getWidget(namespace, 'original');
    await widgets.createFrom({
      metadata: { name: 'copy', annotations: original.metadata?.annotations },
      spec: original.spec,
    });

    await waitFor(() => runs.get('copy') === 1, { what: 'the copy’s create handler to run' });
    expect(runs.get('original')).toBe(1);
  });

  test('an object whose diff-base would pass the 256 KiB annotation limit gets one WriteRefused Warning and a bounded number of writes', async () => {
    const { namespace, widgets, runs } = await operatorCounting('too-large');

    await widgets.create('huge', { size: 1, color: 'x'.repeat(300 * 1024) });

    await waitFor(async () => (await eventsAbout(namespace, 'huge', 'WriteRefused')).length > 0, {
      what: 'the WriteRefused Event',
    });
    // Five attempts, backed off 1 + 2 + 4 + 8 s; after that the object waits for a change.
    await waitFor(() => writesTo(running!.requests, 'huge').length >= 5, {
      what: 'five write attempts',
      timeoutMs: 40_000,
    });
    await settle(5_000);

    const [event, ...more] = await eventsAbout(namespace, 'huge', 'WriteRefused');
    expect(more).toHaveLength(0);
    expect(event?.type).toBe('Warning');
    expect(event?.message).toMatch(/422/);
    expect(writesTo(running!.requests, 'huge')).toHaveLength(5);
    expect(runs.get('huge')).toBe(1);
  }, 60_000);
});
