/**
 * Traces as a collector receives them: the operator runs on the test plane with tracing loaded the way
 * the CLI loads it, and the real OTLP/HTTP exporter sends to a receiver on loopback in this process.
 */
import { randomBytes } from 'node:crypto';
import {
  AdmissionError,
  ApiClient,
  loadTracing,
  on,
  type AdmissionContext,
  type OwnedContext,
  TemporaryError,
  timer,
  type ChangeContext,
  type TimerContext,
  type Tracing,
} from '../../../src/framework/index.js';
import { TRACE_ID_ANNOTATION } from '../../../src/framework/posting/event-correlator.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import {
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../../support/otlp-receiver.js';
import { waitFor } from '../../support/wait-for.js';
import { WIDGET_API_VERSION, type Widget } from '../../support/widgets.js';
import { widgetNamespace } from '../../support/widget-namespace.js';
import { sharedKubeConfig } from '../../support/cluster.js';
import { CoreV1Api } from '@kubernetes/client-node';

const API = WIDGET_API_VERSION;
let receiver: OtlpReceiver;
let tracing: Tracing;
const running: RunningOperator[] = [];

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  tracing = await loadTracing({ url: receiver.url, batchDelay: 50, serviceName: 'tracing-spec' });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});
afterAll(async () => {
  await tracing.shutdown();
  await receiver.close();
});

const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan): ReceivedSpan[] =>
  spans.filter((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId);
const named = (spans: ReceivedSpan[], prefix: string): ReceivedSpan[] =>
  spans.filter((s) => s.name.startsWith(prefix));

describe('tracing an operator', () => {
  test('a create that fails once and then succeeds is one trace: run, queue, attempt 1 (error); then a child run with queue, attempt 2 (ok) and its PATCH', async () => {
    const { kc, namespace, widgets } = await widgetNamespace('traced');
    class Flaky {
      @on.create(API, 'widgets')
      async created({ retry, patch }: ChangeContext): Promise<void> {
        if (retry === 0) throw new TemporaryError('not yet', { delay: 1 });
        patch.status = { created: true };
      }
    }
    running.push(await startOperator(kc, namespace, [Flaky], { tracing }));
    await widgets.create('flaky');

    const ofObject = (spans: ReceivedSpan[]) =>
      spans.filter(
        (s) =>
          s.name === 'run Widget' &&
          s.attributes['k8s.namespace.name'] === namespace &&
          s.attributes['konductor.object.name'] === 'flaky',
      );
    const spans = await receiver.waitForSpans((all) => {
      const runs = ofObject(all);
      return runs.some(
        (run) => run.parentSpanId !== '' && named(childrenOf(all, run), 'PATCH').length > 0,
      );
    }, 'the retry run and its PATCH');

    const first = ofObject(spans).find((run) => run.parentSpanId === '')!;
    const second = ofObject(spans).find((run) => run.parentSpanId === first.spanId)!;
    expect(first.attributes['konductor.run.cause']).toBe('create');
    expect(second.traceId).toBe(first.traceId);

    const firstChildren = childrenOf(spans, first);
    expect(named(firstChildren, 'queue')).toHaveLength(1);
    const attempt1 = named(firstChildren, 'handler created')[0]!;
    expect(attempt1.attributes['konductor.handler.retry']).toBe(0);
    expect(attempt1.attributes['konductor.handler.outcome']).toBe('temporary');
    expect(attempt1.statusCode).toBe(2);

    const secondChildren = childrenOf(spans, second);
    expect(named(secondChildren, 'queue')).toHaveLength(1);
    const attempt2 = named(secondChildren, 'handler created')[0]!;
    expect(attempt2.attributes['konductor.handler.retry']).toBe(1);
    expect(attempt2.attributes['konductor.handler.outcome']).toBe('success');
    const patch = named(secondChildren, 'PATCH')[0]!;
    expect(patch.name).toMatch(
      /^PATCH \/apis\/[^ ]+\/namespaces\/\{namespace\}\/widgets\/\{name\}/,
    );
    expect(patch.attributes['http.response.status_code']).toBe(200);
    expect(patch.kind).toBe(3); // CLIENT
    // The queue span starts with the run's root: when the object was queued.
    const queue = named(firstChildren, 'queue')[0]!;
    expect(queue.startNs).toBe(first.startNs);
    expect(first.resource['service.name']).toBe('tracing-spec');
  });

  test("the HandlerRetrying Event a traced attempt posts carries the trace's id", async () => {
    const { kc, namespace, widgets } = await widgetNamespace('traced-event');
    class Failing {
      @on.create(API, 'widgets')
      async created(_: ChangeContext): Promise<void> {
        throw new TemporaryError('never', { delay: 60 });
      }
    }
    running.push(await startOperator(kc, namespace, [Failing], { tracing }));
    await widgets.create('noisy');
    const core = sharedKubeConfig().makeApiClient(CoreV1Api);
    const event = await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace })).items.find(
          (e) => e.involvedObject.name === 'noisy' && e.metadata.annotations?.[TRACE_ID_ANNOTATION],
        ),
      { what: 'an Event with a trace id' },
    );
    const traceId = event!.metadata.annotations![TRACE_ID_ANNOTATION]!;
    const spans = await receiver.waitForSpans(
      (all) => all.some((s) => s.traceId === traceId && s.name === 'run Widget'),
      'the run the Event names',
    );
    expect(
      spans.find((s) => s.traceId === traceId && s.name === 'run Widget')?.attributes,
    ).toMatchObject({
      'konductor.object.name': 'noisy',
    });
  });

  test('a timer tick is a trace of its own, with its PATCH under it and nothing of the run that started it', async () => {
    const { kc, namespace, widgets } = await widgetNamespace('traced-timer');
    class Ticking {
      @timer(API, 'widgets', { interval: 1 })
      async tick({ patch }: TimerContext): Promise<void> {
        patch.status = { ticked: true };
      }
    }
    running.push(await startOperator(kc, namespace, [Ticking], { tracing }));
    await widgets.create('ticking');
    const spans = await receiver.waitForSpans(
      (all) =>
        all.some(
          (s) =>
            s.name === 'timer tick' &&
            s.attributes['k8s.namespace.name'] === namespace &&
            named(childrenOf(all, s), 'PATCH').length > 0,
        ),
      'a tick with its PATCH',
    );
    const tick = spans.find(
      (s) =>
        s.name === 'timer tick' &&
        s.attributes['k8s.namespace.name'] === namespace &&
        named(childrenOf(spans, s), 'PATCH').length > 0,
    )!;
    expect(tick.parentSpanId).toBe('');
    expect(tick.attributes).toMatchObject({
      'konductor.handler.id': 'tick',
      'konductor.handler.outcome': 'success',
    });
    expect(spans.filter((s) => s.traceId === tick.traceId && s.name.startsWith('run '))).toEqual(
      [],
    );
  });

  test("a child change that wakes its owner is linked from the owner's run, which holds the owned handler's span", async () => {
    const { kc, namespace, widgets } = await widgetNamespace('traced-owned');
    class Owners {
      @on.owned(API, 'widgets', { child: ['v1', 'configmaps'], id: 'config' })
      async config({ patch, child }: OwnedContext<Widget>): Promise<void> {
        patch.status = { config: child.metadata?.name ?? '' };
      }
    }
    running.push(await startOperator(kc, namespace, [Owners], { tracing }));
    const owner = await widgets.create('owner');
    await kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace,
      body: {
        metadata: {
          name: 'settings',
          ownerReferences: [
            {
              apiVersion: API,
              kind: 'Widget',
              name: 'owner',
              uid: owner.metadata!.uid!,
              controller: true,
            },
          ],
        },
        data: { value: '1' },
      },
    });
    const isChild = (s: ReceivedSpan) =>
      s.name === 'child ADDED ConfigMap' && s.attributes['k8s.namespace.name'] === namespace;
    const spans = await receiver.waitForSpans(
      (all) =>
        all.some(
          (run) =>
            run.name === 'run Widget' &&
            run.links.some((link) => all.some((s) => isChild(s) && s.spanId === link.spanId)) &&
            named(childrenOf(all, run), 'owned config').length === 1,
        ),
      "the owner's run linking to the ConfigMap's event",
    );
    const child = spans.find(isChild)!;
    expect(child.parentSpanId).toBe('');
    expect(child.attributes['konductor.object.name']).toBe('settings');
    const run = spans.find(
      (s) => s.name === 'run Widget' && s.links.some((link) => link.spanId === child.spanId),
    )!;
    expect(run.attributes['konductor.object.name']).toBe('owner');
  });

  test('an admission review the API server sends is a SERVER span with its handler beneath', async () => {
    const { kc, namespace, widgets } = await widgetNamespace('traced-admission');
    const identity = `trace-${randomBytes(4).toString('hex')}.konductor.dev`;
    class Sizes {
      @on.validate(API, 'widgets', { id: 'size' })
      size({ spec }: AdmissionContext<Widget>): void {
        if ((spec.size ?? 0) > 9) throw new AdmissionError('spec.size must be at most 9');
      }
    }
    running.push(
      await startOperator(kc, namespace, [Sizes], {
        tracing,
        identity,
        webhooks: { port: 0, url: 'https://127.0.0.1' },
      }),
    );
    const api = new ApiClient(kc);
    try {
      await widgets.create('small', { size: 2 });
      const spans = await receiver.waitForSpans(
        (all) =>
          all.some(
            (s) =>
              s.name === 'admission /validate/size' &&
              named(childrenOf(all, s), 'handler size').length > 0,
          ),
        'the review and its handler',
      );
      const review = spans.find((s) => s.name === 'admission /validate/size')!;
      expect(review.parentSpanId).toBe('');
      expect(review.kind).toBe(2); // SERVER
      expect(review.attributes['url.template']).toBe('/validate/size');
      expect(review.attributes['http.response.status_code']).toBe(200);
      expect(named(childrenOf(spans, review), 'handler size')[0]!.attributes).toMatchObject({
        'konductor.handler.id': 'size',
        'konductor.admission.operation': 'CREATE',
      });
    } finally {
      await Promise.all(running.splice(0).map((r) => r.stop()));
      for (const plural of ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'])
        await api.resource('admissionregistration.k8s.io/v1', plural).delete({ name: identity });
      api.close();
    }
  });
});
