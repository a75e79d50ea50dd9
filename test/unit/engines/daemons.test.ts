import type { ApiClient } from '../../../src/framework/api/api-client.js';
import { DaemonEngine } from '../../../src/framework/engines/daemons.js';
import { TemporaryError } from '../../../src/framework/handling/errors.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import type { EventPoster } from '../../../src/framework/posting/events.js';
import type { DaemonContext, DaemonSpec } from '../../../src/framework/registry/handler-specs.js';
import type { KubeObject } from '../../../src/framework/watching/events.js';

const resource = { group: 'example.com', version: 'v1', plural: 'widgets', kind: 'Widget', namespaced: true, hasStatus: true };
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function widget(extra: Partial<NonNullable<KubeObject['metadata']>> = {}): KubeObject {
  return { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'ns', uid: 'uid-1', resourceVersion: '1', ...extra }, spec: { size: 1 } };
}

function engineWith(fn: (context: DaemonContext) => unknown, options: DaemonSpec['options'] = {}) {
  const posted: string[] = [];
  const poster = { post: (_o: KubeObject, _t: string, reason: string) => posted.push(reason) } as unknown as EventPoster;
  const engine = new DaemonEngine({
    resource,
    client: {} as ApiClient, // daemons here talk to no API
    daemons: [{ kind: 'daemon', id: 'd', resource: { apiVersion: 'example.com/v1', name: 'widgets' }, options, fn }],
    logger: silentLogger(),
    poster,
  });
  return { engine, posted };
}

describe('daemons', () => {
  test('a daemon that returns is not restarted', async () => {
    let runs = 0;
    const { engine } = engineWith(async () => {
      runs += 1;
    });
    engine.observe(widget());
    await sleep(50);
    engine.observe(widget({ resourceVersion: '2' }));
    await sleep(50);
    expect(runs).toBe(1);
    expect(engine.running).toBe(0);
    await engine.stopAll();
  });

  test('a daemon that throws is restarted with backoff, and an Event says so', async () => {
    let runs = 0;
    const { engine, posted } = engineWith(
      async () => {
        runs += 1;
        if (runs < 3) throw new Error('lost connection');
      },
      { backoff: 0.05 },
    );
    engine.observe(widget());
    await sleep(400);
    expect(runs).toBe(3);
    expect(posted).toEqual(['DaemonFailed', 'DaemonFailed']);
    await engine.stopAll();
  });

  test('a TemporaryError restarts the daemon after its delay', async () => {
    const starts: number[] = [];
    const { engine } = engineWith(async () => {
      starts.push(Date.now());
      if (starts.length === 1) throw new TemporaryError('later', { delay: 0.2 });
    });
    engine.observe(widget());
    await sleep(500);
    expect(starts).toHaveLength(2);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(190);
    await engine.stopAll();
  });

  test('stopping resolves `stopped` at once and aborts `signal` after the cancellation backoff', async () => {
    const seen: string[] = [];
    const { engine } = engineWith(
      async ({ stopped, signal }) => {
        await stopped;
        seen.push(`stopped aborted=${signal.aborted}`);
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        seen.push('aborted');
      },
      { cancellationBackoff: 0.1 },
    );
    engine.observe(widget());
    await sleep(20);
    await engine.stopObject('uid-1');
    expect(seen).toEqual(['stopped aborted=false', 'aborted']);
  });

  test('a daemon that ignores its stop is abandoned after the cancellation timeout, with a warning Event', async () => {
    const { engine, posted } = engineWith(() => new Promise(() => undefined), { cancellationTimeout: 0.2 });
    engine.observe(widget());
    const started = Date.now();
    await engine.stopObject('uid-1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(posted).toEqual(['DaemonAbandoned']);
  });

  test('an object being deleted stops its daemon; a stopped object does not start it again', async () => {
    let runs = 0;
    const { engine } = engineWith(async ({ signal }) => {
      runs += 1;
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    });
    engine.observe(widget());
    await sleep(20);
    engine.observe(widget({ deletionTimestamp: '2026-01-01T00:00:00Z' }));
    await sleep(50);
    expect(engine.running).toBe(0);
    expect(runs).toBe(1);
  });

  test('the context reads the newest state of the object each time', async () => {
    const sizes: unknown[] = [];
    const { engine } = engineWith(async (context) => {
      sizes.push(context.spec.size);
      await sleep(50);
      sizes.push(context.spec.size);
      await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
    });
    engine.observe(widget());
    await sleep(10);
    engine.observe({ ...widget({ resourceVersion: '2' }), spec: { size: 5 } });
    await sleep(80);
    await engine.stopAll();
    expect(sizes).toEqual([1, 5]);
  });
});
