import type {
  OwnedChange,
  OwnedContext,
  OwnedSpec,
} from '../../../src/framework/intents/owned-specs.js';
import { PermanentError, TemporaryError } from '../../../src/framework/intents/errors.js';
import { OwnedProcessor } from '../../../src/framework/processing/owned-processor.js';
import type { ObjectEvent } from '../../../src/framework/watching/watch-events.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { LogCapture } from '../../support/log-capture.js';
import {
  WIDGET_API_VERSION,
  widget,
  widgetEvent,
  type WidgetShape,
} from '../../support/widget-objects.js';
import { FakeObjectApi } from './fake-object-api.js';

function child(uid: string, data: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: uid, namespace: 'default', uid },
    data: { v: data },
  };
}

function ownedHandler(
  id: string,
  fn: OwnedSpec['fn'],
  options: OwnedSpec['options'] = {},
): OwnedSpec {
  return {
    kind: 'owned',
    id,
    resource: { apiVersion: WIDGET_API_VERSION, name: 'widgets' },
    child: { resource: { apiVersion: 'v1', name: 'configmaps' } },
    options,
    fn,
  };
}

function setup(handlers: OwnedSpec[], owner: WidgetShape = {}) {
  const api = new FakeObjectApi(widget(owner));
  const logs = new LogCapture();
  const processor = new OwnedProcessor({ api: api.asObjectApi(), handlers, logger: logs.logger });
  const run = (
    latest: ObjectEvent<KubeObject> = { type: 'MODIFIED', object: api.object, fromList: false },
  ) =>
    processor.process({ uid: 'uid-1', latest, events: [], signal: new AbortController().signal });
  return { api, logs, processor, run };
}

describe('owned runs (OwnedProcessor)', () => {
  test('a run hands the handler the owner, the newest child and every coalesced change', async () => {
    const seen: Pick<OwnedContext, 'name' | 'child' | 'event' | 'changes'>[] = [];
    const { processor, run } = setup([
      ownedHandler(
        'Widgets.config',
        ({ name, child, event, changes }) => void seen.push({ name, child, event, changes }),
      ),
    ]);
    processor.offer('uid-1', 'Widgets.config', { event: 'ADDED', child: child('a', '1') });
    processor.offer('uid-1', 'Widgets.config', { event: 'MODIFIED', child: child('b', '1') });
    processor.offer('uid-1', 'Widgets.config', { event: 'MODIFIED', child: child('a', '2') });

    await run();

    expect(seen).toHaveLength(1);
    expect(seen[0]!.name).toBe('w1');
    expect(seen[0]!.event).toBe('MODIFIED');
    expect(seen[0]!.child.data).toEqual({ v: '2' });
    expect(seen[0]!.changes.map((c: OwnedChange) => `${c.child.metadata?.uid} ${c.event}`)).toEqual(
      ['b MODIFIED', 'a MODIFIED'],
    );
  });

  test('without waiting child changes, a run of the owner calls no handler', async () => {
    let calls = 0;
    const { run, api } = setup([ownedHandler('Widgets.config', () => void (calls += 1))]);

    await run();

    expect(calls).toBe(0);
    expect(api.writes).toEqual([]);
  });

  test('changes taken by a run are not seen again by the next', async () => {
    let calls = 0;
    const { processor, run } = setup([ownedHandler('Widgets.config', () => void (calls += 1))]);
    processor.offer('uid-1', 'Widgets.config', { event: 'ADDED', child: child('a', '1') });

    await run();
    await run();

    expect(calls).toBe(1);
  });

  test('the patches of all owned handlers go out in one PATCH of the owner', async () => {
    const { processor, run, api } = setup([
      ownedHandler('Widgets.one', ({ patch }) => void (patch.metadata.labels.one = 'yes')),
      ownedHandler('Widgets.two', ({ patch }) => void (patch.metadata.labels.two = 'yes')),
    ]);
    processor.offer('uid-1', 'Widgets.one', { event: 'ADDED', child: child('a', '1') });
    processor.offer('uid-1', 'Widgets.two', { event: 'ADDED', child: child('a', '1') });

    await run();

    expect(api.writes).toEqual([
      {
        method: 'mergePatch',
        namespace: 'default',
        name: 'w1',
        body: { metadata: { labels: { one: 'yes', two: 'yes' } } },
      },
    ]);
  });

  test('a handler that throws is logged with the owner and handler id, its patch is not sent, and the owner is run again in 1 s, then 2 s', async () => {
    let calls = 0;
    const { processor, run, api, logs } = setup([
      ownedHandler('Widgets.flaky', ({ patch }) => {
        calls += 1;
        patch.metadata.labels.attempt = String(calls);
        if (calls < 3) throw new Error('child unreadable');
      }),
    ]);
    processor.offer('uid-1', 'Widgets.flaky', { event: 'ADDED', child: child('a', '1') });

    const results = [await run(), await run(), await run()];

    expect(results).toEqual([
      { requeueAfterMs: 1_000, retry: true },
      { requeueAfterMs: 2_000, retry: true },
      undefined,
    ]);
    expect(api.writes.map((write) => ('body' in write ? write.body : undefined))).toEqual([
      { metadata: { labels: { attempt: '3' } } },
    ]);
    const [line] = logs.atLeast('error');
    expect(line).toMatchObject({ namespace: 'default', name: 'w1', handler: 'Widgets.flaky' });
    expect(line!.msg).toContain('child unreadable');
  });

  test("a retried run gets the failed run's changes merged with those that arrived meanwhile", async () => {
    const runs: string[][] = [];
    const { processor, run } = setup([
      ownedHandler('Widgets.config', ({ changes }) => {
        runs.push(
          changes.map(
            (c: OwnedChange) =>
              `${c.child.metadata?.uid}=${String((c.child.data as { v?: string } | undefined)?.v)}`,
          ),
        );
        if (runs.length === 1) throw new Error('not yet');
      }),
    ]);
    processor.offer('uid-1', 'Widgets.config', { event: 'ADDED', child: child('a', '1') });
    processor.offer('uid-1', 'Widgets.config', { event: 'ADDED', child: child('b', '1') });
    await run();
    processor.offer('uid-1', 'Widgets.config', { event: 'MODIFIED', child: child('a', '2') });

    await run();

    expect(runs).toEqual([
      ['a=1', 'b=1'],
      ['b=1', 'a=2'],
    ]);
  });

  test("a PermanentError is not retried; a TemporaryError's delay sets the retry", async () => {
    const calls: string[] = [];
    const { processor, run } = setup([
      ownedHandler('Widgets.never', () => {
        calls.push('never');
        throw new PermanentError('the child can never be read');
      }),
      ownedHandler('Widgets.later', () => {
        calls.push('later');
        throw new TemporaryError('the child is still starting', { delay: 15 });
      }),
    ]);
    processor.offer('uid-1', 'Widgets.never', { event: 'ADDED', child: child('a', '1') });
    processor.offer('uid-1', 'Widgets.later', { event: 'ADDED', child: child('a', '1') });

    expect(await run()).toEqual({ requeueAfterMs: 15_000, retry: true });
    await run();

    expect(calls).toEqual(['never', 'later', 'later']);
  });

  test("a failed write of the owner puts the run's changes back and asks for a retry", async () => {
    let calls = 0;
    const { processor, run, api } = setup([
      ownedHandler(
        'Widgets.config',
        ({ patch }) => void ((calls += 1), (patch.metadata.labels.seen = 'yes')),
      ),
    ]);
    processor.offer('uid-1', 'Widgets.config', { event: 'ADDED', child: child('a', '1') });
    api.failNext(500, 'mergePatch');

    expect(await run()).toEqual({ requeueAfterMs: 1_000, retry: true });
    expect(await run()).toBeUndefined();
    expect(calls).toBe(2);
    expect(api.object.metadata?.labels).toEqual({ seen: 'yes' });
  });

  test('an owner being deleted is skipped', async () => {
    let calls = 0;
    const { processor, run } = setup([ownedHandler('Widgets.config', () => void (calls += 1))], {
      deleting: true,
      finalizers: ['x'],
    });
    processor.offer('uid-1', 'Widgets.config', { event: 'MODIFIED', child: child('a', '1') });

    await run();

    expect(calls).toBe(0);
  });

  test('an owner failing the handler’s filters is skipped', async () => {
    let calls = 0;
    const { processor, run } = setup([
      ownedHandler('Widgets.gold', () => void (calls += 1), { labels: { tier: 'gold' } }),
    ]);
    processor.offer('uid-1', 'Widgets.gold', { event: 'MODIFIED', child: child('a', '1') });

    await run();

    expect(calls).toBe(0);
  });

  test('a deleted owner’s waiting changes are dropped', async () => {
    let calls = 0;
    const { processor, run } = setup([ownedHandler('Widgets.config', () => void (calls += 1))]);
    processor.offer('uid-1', 'Widgets.config', { event: 'MODIFIED', child: child('a', '1') });

    await run(widgetEvent({}, { type: 'DELETED' }));
    await run();

    expect(calls).toBe(0);
    expect(processor.waiting).toBe(0);
  });

  test('the next run reads the owner as written, while the watch has not delivered the write yet', async () => {
    const sizes: unknown[] = [];
    const { processor, run } = setup([
      ownedHandler('Widgets.config', ({ spec, patch }) => {
        sizes.push(spec.size);
        patch.spec.size = 5;
      }),
    ]);
    const stale = widgetEvent({ resourceVersion: '1' });
    processor.offer('uid-1', 'Widgets.config', { event: 'MODIFIED', child: child('a', '1') });
    await run(stale);
    processor.offer('uid-1', 'Widgets.config', { event: 'MODIFIED', child: child('a', '2') });

    await run(stale);

    expect(sizes).toEqual([1, 5]);
  });

  test('an owner gone before its patch is written is not an error', async () => {
    const { processor, run, api, logs } = setup([
      ownedHandler('Widgets.config', ({ patch }) => void (patch.metadata.labels.seen = 'yes')),
    ]);
    processor.offer('uid-1', 'Widgets.config', { event: 'MODIFIED', child: child('a', '1') });
    const latest = { type: 'MODIFIED' as const, object: api.object, fromList: false };
    api.remove();

    await run(latest);

    expect(logs.atLeast('error')).toEqual([]);
  });
});
