import { shareStrings, StringTable } from '../../../src/framework/watching/compact-object.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

/** A parsed object as JSON.parse makes it: every string its own copy. */
function parsed(name: string, namespace: string, creationTimestamp: string): KubeObject {
  return JSON.parse(
    JSON.stringify({
      metadata: { name, namespace, uid: `uid-${name}`, creationTimestamp },
      spec: {},
    }),
  ) as KubeObject;
}

describe('shareStrings', () => {
  // Which copy of a string an object holds is not observable from JavaScript; the heap figures of
  // `npm run bench -- scale` show the saving. These pin that only copies change, never values.
  it('leaves every value of an object seen for the first time as it was, filling in apiVersion and kind', () => {
    const strings = { apiVersion: 'example.com/v1', kind: 'Widget', table: new StringTable() };
    shareStrings(parsed('a', 'team-a', '2026-11-24T16:07:38Z'), undefined, strings);
    const second = parsed('b', 'team-a', '2026-11-24T16:07:38Z');
    shareStrings(second, undefined, strings);
    expect(second).toEqual({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: {
        name: 'b',
        namespace: 'team-a',
        uid: 'uid-b',
        creationTimestamp: '2026-11-24T16:07:38Z',
      },
      spec: {},
    });
  });

  it('keeps one entry per distinct namespace and creation time met', () => {
    const strings = { apiVersion: 'example.com/v1', kind: 'Widget', table: new StringTable() };
    for (let i = 0; i < 100; i++)
      shareStrings(parsed(`w-${i}`, 'team-a', '2026-11-24T16:07:38Z'), undefined, strings);
    expect(strings.table.size).toBe(2);
  });
});

describe('shareStrings with labels', () => {
  function labelled(name: string, labels: Record<string, string>): KubeObject {
    return JSON.parse(JSON.stringify({ metadata: { name, labels }, spec: {} })) as KubeObject;
  }

  it('keeps one table entry per distinct label value met, leaving the values as they were', () => {
    const strings = {
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      table: new StringTable(),
      labelValues: new StringTable(),
    };
    const objects = Array.from({ length: 100 }, (_, i) =>
      labelled(`w-${i}`, { 'konductor.dev/shard': 'replica-a', app: i % 2 ? 'web' : 'db' }),
    );
    for (const object of objects) shareStrings(object, undefined, strings);
    expect(strings.labelValues.size).toBe(3);
    expect(strings.table.size).toBe(0);
    expect(objects[1]!.metadata!.labels).toEqual({
      'konductor.dev/shard': 'replica-a',
      app: 'web',
    });
  });

  it('takes a changed label value as it came, and an unchanged one from the version before', () => {
    const strings = { apiVersion: 'example.com/v1', kind: 'Widget' };
    const before = labelled('w', { 'konductor.dev/shard': 'replica-a', app: 'web' });
    const after = labelled('w', { 'konductor.dev/shard': 'replica-b', app: 'web' });
    shareStrings(after, before, strings);
    expect(after.metadata!.labels).toEqual({ 'konductor.dev/shard': 'replica-b', app: 'web' });
  });
});

describe('StringTable', () => {
  it('starts afresh past its limit, so distinct values cannot grow it without bound', () => {
    const table = new StringTable(100);
    for (let i = 0; i < 1_000; i++) table.intern(`2026-11-24T16:${i}Z`);
    expect(table.size).toBeLessThanOrEqual(100);
  });

  it('hands back an equal string for a value it holds', () => {
    const table = new StringTable();
    table.intern('team-a');
    expect(table.intern(['team', 'a'].join('-'))).toBe('team-a');
  });
});
