import { on, TemporaryError, type ChangeContext } from '../../../src/framework/index.js';
import { progressKey } from '../../../src/framework/state/keys.js';
import type { ProgressRecord } from '../../../src/framework/state/progress.js';
import { runOperator } from '../../../src/testing/index.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { getWidget, Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

const API = WIDGET_API_VERSION;

async function progressOf(
  namespace: string,
  name: string,
  handlerId: string,
): Promise<ProgressRecord | undefined> {
  const widget = await getWidget(namespace, name);
  const raw = widget.metadata?.annotations?.[progressKey(handlerId)];
  return raw === undefined ? undefined : (JSON.parse(raw) as ProgressRecord);
}

describe('retries', () => {
  const running: RunningOperator[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
  });

  test('a handler failing twice with TemporaryError(1 s) then succeeding runs 3 times; progress shows the retries while pending and is cleared after', async () => {
    const { kc, namespace } = await widgetNamespace('retry');
    const attempts: number[] = [];
    class Flaky {
      @on.create(API, 'widgets')
      async created({ retry }: ChangeContext): Promise<void> {
        attempts.push(retry);
        if (retry < 2) throw new TemporaryError('not yet', { delay: 1 });
      }
    }
    running.push(await startOperator(kc, namespace, [Flaky]));
    await new Widgets(kc, namespace).create('flaky');

    const pending: Array<ProgressRecord | undefined> = [];
    await waitFor(
      async () => {
        const record = await progressOf(namespace, 'flaky', 'created');
        if (record) pending.push(record);
        return attempts.length === 3 && record === undefined;
      },
      { what: 'three attempts and a cleared progress record' },
    );

    expect(attempts).toEqual([0, 1, 2]);
    expect(
      pending.some((r) => r?.retries === 1 && r.message === 'not yet' && r.delayed !== undefined),
    ).toBe(true);
    expect(pending.some((r) => r?.retries === 2)).toBe(true);
  });

  test('a retry waiting for its delay blocks nothing else: with a single worker, another object is handled meanwhile', async () => {
    const DELAY_S = 8;
    const { kc, namespace } = await widgetNamespace('retry-wait');
    const waitingAttempts: number[] = [];
    let otherHandled: { at: number; waitingAttempts: number } | undefined;
    class Handlers {
      @on.create(API, 'widgets')
      async created({ name, retry }: ChangeContext): Promise<void> {
        if (name !== 'waiting') {
          otherHandled = { at: Date.now(), waitingAttempts: waitingAttempts.length };
          return;
        }
        waitingAttempts.push(Date.now());
        if (retry === 0) throw new TemporaryError('not yet', { delay: DELAY_S });
      }
    }
    // One worker: a retry that held its slot while waiting would hold up every other object.
    running.push(
      await runOperator({
        kubeConfig: kc,
        handlers: [Handlers],
        namespaces: [namespace],
        concurrency: 1,
      }),
    );
    const widgets = new Widgets(kc, namespace);
    await widgets.create('waiting');
    await waitFor(() => waitingAttempts.length === 1, {
      what: "the waiting object's first attempt",
    });
    await widgets.create('other');
    await waitFor(() => otherHandled !== undefined, { what: 'the other object to be handled' });
    await waitFor(() => waitingAttempts.length === 2, {
      what: "the waiting object's retry",
      timeoutMs: DELAY_S * 1000 + 20_000,
    });

    // The other object was handled before the retry's delay had passed, while the retry was still waiting.
    expect(otherHandled!.waitingAttempts).toBe(1);
    expect(otherHandled!.at - waitingAttempts[0]!).toBeLessThan(DELAY_S * 1000);
    expect(waitingAttempts[1]! - waitingAttempts[0]!).toBeGreaterThanOrEqual(DELAY_S * 1000 - 100);
  });

  test('a retry survives an operator restart: the next process continues the count and honours the delay', async () => {
    const { kc, namespace } = await widgetNamespace('retry-restart');
    const attempts: Array<{ retry: number; at: number }> = [];
    class Flaky {
      @on.create(API, 'widgets')
      async created({ retry }: ChangeContext): Promise<void> {
        attempts.push({ retry, at: Date.now() });
        if (retry < 2) throw new TemporaryError('not yet', { delay: 2 });
      }
    }
    const first = await startOperator(kc, namespace, [Flaky]);
    await new Widgets(kc, namespace).create('flaky');
    await waitFor(async () => (await progressOf(namespace, 'flaky', 'created'))?.retries === 1, {
      what: 'the first failure to be recorded',
    });
    await first.stop();
    const delayedUntil = Date.parse((await progressOf(namespace, 'flaky', 'created'))!.delayed!);

    running.push(await startOperator(kc, namespace, [Flaky]));
    await waitFor(
      async () =>
        attempts.length === 3 && (await progressOf(namespace, 'flaky', 'created')) === undefined,
      { what: 'the remaining attempts' },
    );

    expect(attempts.map((a) => a.retry)).toEqual([0, 1, 2]);
    expect(attempts[1]!.at).toBeGreaterThanOrEqual(delayedUntil);
    expect(attempts[1]!.at - delayedUntil).toBeLessThan(1_500);
  });
});
