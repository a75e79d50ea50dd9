/**
 * A handler that reports the same problem over and over, or many problems about one object, costs the
 * API server a handful of Event writes, not one per report; and a queue of Events the API server
 * cannot take does not hold up the operator's stop past its drain deadline.
 */
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, type CoreV1Event, type KubeConfig } from '@kubernetes/client-node';
import { events, on, type ChangeContext, type KubeObject } from '../../../src/framework/index.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';
import { installWidgetCrd, WIDGET_API_VERSION, Widgets } from '../../support/widgets.js';
import { type HandlerClass } from '../../../src/framework/registry/registry.js';
import { FaultProxy } from '../../../src/testing/chaos/index.js';

let kc: KubeConfig;
const running: TestOperator[] = [];
let proxy: FaultProxy | undefined;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
});
afterEach(async () => {
  proxy?.pass();
  await Promise.all(running.splice(0).map((operator) => operator.stop()));
  await proxy?.stop();
  proxy = undefined;
});

/** Handlers that report about each new widget as `report` says. */
function reporting(report: (ctx: ChangeContext) => Promise<void> | void): HandlerClass {
  class Reporter {
    @on.create(WIDGET_API_VERSION, 'widgets')
    async created(ctx: ChangeContext): Promise<void> {
      await report(ctx);
    }
  }
  return Reporter;
}

async function eventsAbout(namespace: string, name: string): Promise<CoreV1Event[]> {
  const { items } = await kc
    .makeApiClient(CoreV1Api)
    .listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return items;
}

const total = (items: CoreV1Event[]): number =>
  items.reduce((sum, event) => sum + (event.count ?? 1), 0);

describe('Events under a flood', () => {
  test('1,000 identical warnings about one object are one Event whose count is 1,000', async () => {
    const namespace = await uniqueNamespace(kc, 'event-flood');
    const flood = reporting(async (ctx) => {
      // Ten bursts with pauses between, so later reports find the Event already written.
      for (let burst = 0; burst < 10; burst++) {
        for (let i = 0; i < 100; i++) ctx.events.warn('BadPort', 'port 70000 is out of range');
        await sleep(50);
      }
    });
    running.push(await runOperator({ kubeConfig: kc, handlers: [flood], namespaces: [namespace] }));

    await new Widgets(kc, namespace).create('noisy');
    await waitFor(async () => total(await eventsAbout(namespace, 'noisy')) === 1000, {
      what: 'a count of 1,000',
      timeoutMs: 30_000,
    });

    const posted = await eventsAbout(namespace, 'noisy');
    expect(posted).toHaveLength(1);
    expect(posted[0]).toMatchObject({ type: 'Warning', reason: 'BadPort', count: 1000 });
  }, 60_000);

  test('an object reporting 200 different problems gets its burst of 25 Events, the rest counted as dropped', async () => {
    const namespace = await uniqueNamespace(kc, 'event-flood');
    const metrics = new MetricsRecorder();
    const flood = reporting((ctx) => {
      for (let i = 0; i < 200; i++) ctx.events.warn(`Problem${i}`, `problem number ${i}`);
    });
    running.push(
      await runOperator({ kubeConfig: kc, handlers: [flood], namespaces: [namespace], metrics }),
    );

    await new Widgets(kc, namespace).create('noisy');
    await waitFor(
      async () =>
        (await eventsAbout(namespace, 'noisy')).length >= 25 &&
        metrics.counter('events_dropped_total') >= 175,
      { what: '25 Events and 175 drops' },
    );
    await running[0]!.operator.stop(5_000);

    expect(await eventsAbout(namespace, 'noisy')).toHaveLength(25);
    expect(metrics.counter('events_dropped_total', { reason: 'rate_limited' })).toBe(175);
  }, 60_000);

  test('stop returns at its drain deadline with a full queue of Events the API server does not take', async () => {
    const namespace = await uniqueNamespace(kc, 'event-flood');
    const metrics = new MetricsRecorder();
    proxy = await FaultProxy.forControlPlane({
      dir: dirname(process.env.KONDUCTOR_TEST_KUBECONFIG!),
      kubeConfig: () => kc,
    });
    let entered = false;
    let posted = false;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const flood = reporting(async () => {
      entered = true;
      await gate;
      // One warning about each of 3,000 objects: no per-object limit applies, only the queue's bound.
      for (let i = 0; i < 3000; i++) {
        const object: KubeObject = {
          apiVersion: WIDGET_API_VERSION,
          kind: 'Widget',
          metadata: { name: `ghost-${i}`, namespace, uid: `ghost-uid-${i}` },
        };
        events.warn(object, 'Unreachable', 'backend not reachable');
      }
      posted = true;
    });
    const operator = await runOperator({
      kubeConfig: proxy.kubeConfig(),
      handlers: [flood],
      namespaces: [namespace],
      metrics,
    });
    await new Widgets(kc, namespace).create('trigger');
    await waitFor(() => entered, { what: 'the handler to run' });

    proxy.blackhole();
    release();
    await waitFor(() => posted, { what: 'the warnings to be posted' });
    const stopping = operator.operator.stop(3_000).then(() => 'stopped' as const);
    const outcome = await Promise.race([
      stopping,
      sleep(30_000).then(() => 'still stopping' as const),
    ]);

    expect(outcome).toBe('stopped');
    expect(metrics.counter('events_dropped_total', { reason: 'queue_full' })).toBe(1999);
    expect(metrics.counter('events_dropped_total', { reason: 'stopped' })).toBe(1001);
  }, 90_000);
});
