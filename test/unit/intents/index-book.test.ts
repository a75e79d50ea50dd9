import type { Resource } from '../../../src/framework/api/resource.js';
import type { IndexSpec } from '../../../src/framework/intents/cache-contract.js';
import { IndexBook } from '../../../src/framework/intents/index-book.js';
import { indexContribution } from '../../../src/framework/intents/index-function.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { LogCapture } from '../../support/log-capture.js';

const pods: Resource = {
  group: '',
  version: 'v1',
  plural: 'pods',
  kind: 'Pod',
  namespaced: true,
  hasStatus: true,
};

function pod(uid: string, name: string, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { uid, name, namespace: 'ns', labels } };
}

function byApp(overrides: Partial<IndexSpec> = {}): IndexSpec {
  return {
    kind: 'index',
    id: 'Pods.byApp',
    resource: { apiVersion: 'v1', name: 'pods' },
    options: {},
    fn: ({ labels, name }) => (labels.app ? { [labels.app]: name } : undefined),
    ...overrides,
  };
}

describe('index bookkeeping', () => {
  test('each object contributes its values under its keys, one value per object', () => {
    const book = new IndexBook<string>();
    book.set('u1', { db: 'a' });
    book.set('u2', { db: 'b', web: 'b' });
    expect(book.get('db')).toEqual(['a', 'b']);
    expect(book.get('web')).toEqual(['b']);
    expect([...book.keys()].sort()).toEqual(['db', 'web']);
    expect(book.size).toBe(2);
  });

  test('a new contribution replaces the object’s old one whole: a key it no longer returns loses its value', () => {
    const book = new IndexBook<string>();
    book.set('u1', { db: 'a' });
    book.set('u2', { db: 'b' });
    book.set('u1', { web: 'a' });
    expect(book.get('db')).toEqual(['b']);
    expect(book.get('web')).toEqual(['a']);
  });

  test('an object contributing nothing (undefined or {}) and a deleted object leave no empty key behind', () => {
    const book = new IndexBook<string>();
    book.set('u1', { db: 'a' });
    book.set('u1', undefined);
    book.set('u2', { web: 'b' });
    book.delete('u2');
    book.set('u3', {});
    expect(book.size).toBe(0);
    expect(book.has('db')).toBe(false);
    expect(book.get('db')).toEqual([]);
    expect(book.contributors).toBe(0);
  });

  test('after a relisting, objects the listing no longer has disappear from the index', () => {
    const book = new IndexBook<string>();
    book.set('u1', { db: 'a' });
    book.set('u2', { db: 'b' });
    book.set('u3', { web: 'c' });
    const listed = new Set(['u2']);
    book.retain((uid) => listed.has(uid));
    expect(book.get('db')).toEqual(['b']);
    expect(book.has('web')).toBe(false);
  });
});

describe('one object’s contribution', () => {
  test('is what the index function returns for an object passing the index’s filters', () => {
    const failing = new Set<string>();
    expect(
      indexContribution(
        byApp(),
        pod('u1', 'p1', { app: 'db' }),
        pods,
        new LogCapture().logger,
        failing,
      ),
    ).toEqual({ db: 'p1' });
  });

  test('is nothing for an object the labels filter or `when` rejects, without calling the function', () => {
    const calls: string[] = [];
    const fn: IndexSpec['fn'] = ({ name }) => (calls.push(name), { k: 'v' });
    const spec = byApp({
      fn,
      options: { labels: { app: 'db' }, when: (o) => o.metadata?.name !== 'skip' },
    });
    expect(
      indexContribution(
        spec,
        pod('u1', 'p1', { app: 'web' }),
        pods,
        new LogCapture().logger,
        new Set(),
      ),
    ).toBeUndefined();
    expect(
      indexContribution(
        spec,
        pod('u2', 'skip', { app: 'db' }),
        pods,
        new LogCapture().logger,
        new Set(),
      ),
    ).toBeUndefined();
    expect(calls).toEqual([]);
  });

  test('a throwing function: logged once per object with its namespace/name and the index id, and the object contributes nothing', () => {
    const logs = new LogCapture();
    const failing = new Set<string>();
    const spec = byApp({
      fn: () => {
        throw new Error('no app');
      },
    });
    for (let i = 0; i < 3; i++)
      expect(indexContribution(spec, pod('u1', 'p1'), pods, logs.logger, failing)).toBeUndefined();
    indexContribution(spec, pod('u2', 'p2'), pods, logs.logger, failing);
    const errors = logs.atLeast('error');
    expect(errors.map((line) => line.msg)).toEqual([
      expect.stringContaining('index Pods.byApp failed for ns/p1: no app'),
      expect.stringContaining('index Pods.byApp failed for ns/p2: no app'),
    ]);
    expect(errors[0]).toMatchObject({ namespace: 'ns', name: 'p1', index: 'Pods.byApp' });
  });

  test('an object that failed is logged again only after it once succeeded', () => {
    const logs = new LogCapture();
    const failing = new Set<string>();
    let broken = true;
    const spec = byApp({
      fn: () => {
        if (broken) throw new Error('broken');
        return { k: 'v' };
      },
    });
    indexContribution(spec, pod('u1', 'p1'), pods, logs.logger, failing);
    broken = false;
    expect(indexContribution(spec, pod('u1', 'p1'), pods, logs.logger, failing)).toEqual({
      k: 'v',
    });
    broken = true;
    indexContribution(spec, pod('u1', 'p1'), pods, logs.logger, failing);
    expect(logs.atLeast('error')).toHaveLength(2);
  });

  test('a promise or an array is refused: index functions are synchronous and return values by key', () => {
    const logs = new LogCapture();
    const asyncSpec = byApp({
      fn: (() => Promise.resolve({ k: 'v' })) as unknown as IndexSpec['fn'],
    });
    const arraySpec = byApp({ fn: (() => ['v']) as unknown as IndexSpec['fn'] });
    expect(
      indexContribution(asyncSpec, pod('u1', 'p1'), pods, logs.logger, new Set()),
    ).toBeUndefined();
    expect(
      indexContribution(arraySpec, pod('u1', 'p1'), pods, logs.logger, new Set()),
    ).toBeUndefined();
    expect(logs.atLeast('error').map((line) => line.msg)).toEqual([
      expect.stringContaining('synchronous'),
      expect.stringContaining('an array'),
    ]);
  });
});
