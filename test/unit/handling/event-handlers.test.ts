import { runEventHandlers } from '../../../src/framework/handling/event-handlers.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import { MetricsRecorder } from '../../../src/framework/observability/metrics.js';
import type { EventHandlerSpec } from '../../../src/framework/registry/handler-specs.js';
import type { KubeObject, ObjectEvent } from '../../../src/framework/watching/events.js';
import { makeClient } from '../watching/fake-api.js';

function event(type: ObjectEvent['type'], size: number): ObjectEvent<KubeObject> {
  return {
    type,
    object: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: 'default', uid: 'uid-1', resourceVersion: String(size) }, spec: { size } },
    fromList: false,
  };
}

function eventHandler(id: string, fn: EventHandlerSpec['fn'], options: EventHandlerSpec['options'] = {}): EventHandlerSpec {
  return { kind: 'event', id, resource: { apiVersion: 'example.com/v1', name: 'widgets' }, options, fn };
}

describe('@on.event handler metrics', () => {
  const client = makeClient();
  afterAll(() => client.close());

  async function run(handlers: EventHandlerSpec[], events: ObjectEvent<KubeObject>[]): Promise<MetricsRecorder> {
    const metrics = new MetricsRecorder();
    await runEventHandlers(handlers, events, silentLogger(), new AbortController().signal, client, metrics);
    return metrics;
  }

  test('each run is counted in handler_runs_total by handler id, as a success or a failure', async () => {
    const handlers = [
      eventHandler('Audit.record', () => undefined),
      eventHandler('Audit.broken', () => {
        throw new Error('audit sink down');
      }),
    ];

    const metrics = await run(handlers, [event('ADDED', 1), event('MODIFIED', 2), event('DELETED', 2)]);

    expect(metrics.counter('handler_runs_total', { handler: 'Audit.record', result: 'success' })).toBe(3);
    expect(metrics.counter('handler_runs_total', { handler: 'Audit.broken', result: 'failure' })).toBe(3);
    expect(metrics.counter('handler_runs_total')).toBe(6);
  });

  test('each run is timed in handler_duration_seconds', async () => {
    const metrics = await run([eventHandler('Audit.record', () => new Promise((resolve) => setTimeout(resolve, 20)))], [event('ADDED', 1)]);

    const durations = metrics.histograms.get('handler_duration_seconds');
    expect(durations?.count).toBe(1);
    expect(durations!.sum).toBeGreaterThanOrEqual(0.015);
  });

  test('a handler its `when` filter skips is not counted', async () => {
    const metrics = await run([eventHandler('Audit.big', () => undefined, { when: (body) => (body.spec as { size: number }).size > 5 })], [event('ADDED', 1)]);

    expect(metrics.counter('handler_runs_total')).toBe(0);
  });
});
