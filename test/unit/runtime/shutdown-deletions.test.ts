import type { ApiClient, RequestInit } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';
import type { JsonPatchOp } from '../../../src/framework/api/object-api.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { ShutdownDeletions } from '../../../src/framework/runtime/shutdown-deletions.js';
import { Identity } from '../../../src/framework/state/identity.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { LogCapture } from '../../support/log-capture.js';
import { widgetResource } from '../../support/widget-objects.js';

/**
 * A stopping operator's deletions against a fake API: which objects it waits for, which finalizers it
 * takes off (and logs), and that it touches nothing else.
 */

const FINALIZER = Identity.DEFAULT.finalizer;
const collections = [{ resource: widgetResource }];

/** An API server holding widgets and namespaces; a widget whose finalizers empty while deleting is gone. */
class FakeApi {
  readonly widgets = new Map<string, KubeObject>();
  readonly terminating = new Set<string>();
  readonly writes: string[] = [];

  widget(
    namespace: string,
    name: string,
    options: { deleting?: boolean; finalizers?: string[]; labels?: Record<string, string> } = {},
  ): void {
    const metadata = {
      namespace,
      name,
      labels: options.labels ?? {},
      uid: `${namespace}/${name}`,
      resourceVersion: '1',
      finalizers: options.finalizers ?? [FINALIZER],
      ...(options.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    };
    this.widgets.set(`${namespace}/${name}`, { metadata });
  }

  asClient(): ApiClient {
    return {
      request: (method: string, path: string, init?: RequestInit) =>
        this.request(method, path, init),
    } as unknown as ApiClient;
  }

  private async request(method: string, path: string, init: RequestInit = {}): Promise<unknown> {
    const namespace = /^\/api\/v1\/namespaces\/([^/]+)$/.exec(path)?.[1];
    if (method === 'GET' && namespace)
      return {
        metadata: {
          name: namespace,
          ...(this.terminating.has(namespace) ? { deletionTimestamp: 'x' } : {}),
        },
      };
    if (method === 'GET') {
      // Equality selectors only (`key=value`), as a sharded replica's own objects are selected.
      const [key, value] = String(init.query?.labelSelector ?? '=').split('=');
      const items = [...this.widgets.values()].filter(
        (widget) => !key || widget.metadata?.labels?.[key] === value,
      );
      return { items, metadata: {} };
    }
    const [ns, name] = path
      .split('/')
      .slice(-3)
      .filter((_, i) => i !== 1);
    const key = `${ns}/${name}`;
    const object = this.widgets.get(key);
    if (!object) throw new ApiError(404, 'not found');
    this.writes.push(`${method} ${key}`);
    const ops = init.body as JsonPatchOp[];
    const finalizers = [...(object.metadata?.finalizers ?? [])];
    for (const op of ops)
      if (op.op === 'remove') finalizers.splice(Number(op.path.split('/').pop()), 1);
    const written = { metadata: { ...object.metadata, finalizers } };
    if (finalizers.length === 0 && written.metadata.deletionTimestamp) this.widgets.delete(key);
    else this.widgets.set(key, written);
    return written;
  }
}

function deletions(
  api: FakeApi,
  log: LogCapture,
  ownNamespace?: string,
  clock?: FakeClock,
  ownObjects?: string,
): ShutdownDeletions {
  return new ShutdownDeletions({
    client: api.asClient(),
    identity: Identity.DEFAULT,
    logger: log.logger,
    ownNamespace,
    ownObjects,
    clock,
    pollMs: 100,
  });
}

describe('a stopping operator’s deletions', () => {
  test('releasing takes the finalizer off only the objects the rule names, and logs each with namespace/name and why', async () => {
    const api = new FakeApi();
    api.widget('going', 'stuck', { deleting: true });
    api.widget('going', 'alive');
    api.widget('healthy', 'deleting', { deleting: true });
    api.widget('going', 'shared', {
      deleting: true,
      finalizers: ['other.example.com/cleanup', FINALIZER],
    });
    api.terminating.add('going');
    const log = new LogCapture();

    const released = await deletions(api, log).release(collections, 5_000);

    expect(released).toBe(2);
    expect(api.writes.sort()).toEqual(['PATCH going/shared', 'PATCH going/stuck']);
    expect(api.widgets.has('going/stuck')).toBe(false);
    expect(api.widgets.get('going/shared')?.metadata?.finalizers).toEqual([
      'other.example.com/cleanup',
    ]);
    expect(
      log
        .containing('released the finalizer of')
        .map((line) => [line.msg, line.namespace, line.name])
        .sort(),
    ).toEqual([
      [
        'released the finalizer of going/shared: its namespace is being deleted and the operator stopped before its delete handlers finished',
        'going',
        'shared',
      ],
      [
        'released the finalizer of going/stuck: its namespace is being deleted and the operator stopped before its delete handlers finished',
        'going',
        'stuck',
      ],
    ]);
  });

  test('with its own namespace being deleted, every object there is released, deleting or not', async () => {
    const api = new FakeApi();
    api.widget('operators', 'a');
    api.widget('operators', 'b', { deleting: true });
    api.widget('apps', 'c');
    api.terminating.add('operators');

    await deletions(api, new LogCapture(), 'operators').release(collections, 5_000);

    expect(api.writes.sort()).toEqual(['PATCH operators/a', 'PATCH operators/b']);
  });

  test('objects without the finalizer are never written to', async () => {
    const api = new FakeApi();
    api.widget('going', 'plain', { deleting: true, finalizers: ['other.example.com/cleanup'] });
    api.terminating.add('going');

    expect(await deletions(api, new LogCapture()).release(collections, 5_000)).toBe(0);
    expect(api.writes).toEqual([]);
  });

  describe('finishing', () => {
    let clock: FakeClock;
    beforeEach(() => {
      clock = installFakeClock();
    });
    afterEach(() => clock.uninstall());

    test('returns as soon as the objects being deleted are gone, having said which it waits for', async () => {
      const api = new FakeApi();
      api.widget('apps', 'w', { deleting: true });
      const log = new LogCapture();
      let done = false;
      void deletions(api, log, undefined, clock)
        .finish(collections, 10_000)
        .then(() => (done = true));
      await clock.advanceAsync(300);
      expect(done).toBe(false);
      expect(log.containing('finishing').map((line) => line.msg)).toEqual([
        'finishing 1 deletion(s) before stopping: apps/w',
      ]);

      api.widgets.delete('apps/w'); // its delete handlers ran, and the finalizer came off
      await clock.advanceAsync(200);
      expect(done).toBe(true);
    });

    test('gives up at its budget and says which deletions are unfinished', async () => {
      const api = new FakeApi();
      api.widget('apps', 'w', { deleting: true });
      const log = new LogCapture();
      let done = false;
      void deletions(api, log, undefined, clock)
        .finish(collections, 1_000)
        .then(() => (done = true));
      await clock.advanceAsync(1_200);
      expect(done).toBe(true);
      expect(log.containing('unfinished').map((line) => line.msg)).toEqual([
        'stopping with 1 deletion(s) unfinished: apps/w',
      ]);
    });

    test("a sharded replica waits only for its own objects' deletions, not for those another replica (or none) handles", async () => {
      const api = new FakeApi();
      api.widget('apps', 'mine', { deleting: true, labels: { 'konductor.dev/shard': 'a' } });
      api.widget('apps', 'theirs', { deleting: true, labels: { 'konductor.dev/shard': 'b' } });
      const log = new LogCapture();
      let done = false;
      void deletions(api, log, undefined, clock, 'konductor.dev/shard=a')
        .finish(collections, 10_000)
        .then(() => (done = true));
      await clock.advanceAsync(0);
      expect(log.containing('finishing').map((line) => line.msg)).toEqual([
        'finishing 1 deletion(s) before stopping: apps/mine',
      ]);

      api.widgets.delete('apps/mine');
      await clock.advanceAsync(200);
      expect(done).toBe(true);
    });

    test('does not wait when nothing is being deleted', async () => {
      const api = new FakeApi();
      api.widget('apps', 'w');
      const survey = await deletions(api, new LogCapture(), undefined, clock).finish(
        collections,
        10_000,
      );
      expect(survey?.held.map((entry) => entry.name)).toEqual(['w']);
      expect(ShutdownDeletions.mayRelease(survey)).toBe(false);
    });
  });
});
