import { diff, jsonEqual, narrowDiff, type Diff } from '../../../src/framework/state/diff.js';

describe('jsonEqual', () => {
  test('compares primitives by value', () => {
    expect(jsonEqual(1, 1)).toBe(true);
    expect(jsonEqual('a', 'a')).toBe(true);
    expect(jsonEqual(null, null)).toBe(true);
    expect(jsonEqual(1, '1')).toBe(false);
    expect(jsonEqual(null, undefined)).toBe(false);
    expect(jsonEqual(0, false)).toBe(false);
  });

  test('compares objects deeply, ignoring key order', () => {
    expect(jsonEqual({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1, b: { c: [1, 2] } }, { a: 1, b: { c: [1, 3] } })).toBe(false);
  });

  test('treats objects with different keys as different', () => {
    expect(jsonEqual({ a: 1 }, { b: 1 })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
  });

  test('compares arrays element by element, in order', () => {
    expect(jsonEqual([1, { a: 2 }], [1, { a: 2 }])).toBe(true);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual([1], [1, 1])).toBe(false);
  });

  test('does not equate an array with an object', () => {
    expect(jsonEqual([], {})).toBe(false);
    expect(jsonEqual({ 0: 'a' }, ['a'])).toBe(false);
  });
});

describe('diff', () => {
  test('is empty for equal values', () => {
    expect(diff({ spec: { size: 3 } }, { spec: { size: 3 } })).toEqual([]);
  });

  test('reports a new key as add', () => {
    expect(diff({}, { size: 3 })).toEqual([{ op: 'add', path: ['size'], old: undefined, new: 3 }]);
  });

  test('reports a changed value as change', () => {
    expect(diff({ size: 1 }, { size: 3 })).toEqual([
      { op: 'change', path: ['size'], old: 1, new: 3 },
    ]);
  });

  test('reports a missing key as remove', () => {
    expect(diff({ size: 1 }, {})).toEqual([
      { op: 'remove', path: ['size'], old: 1, new: undefined },
    ]);
  });

  test('recurses into nested objects', () => {
    expect(diff({ spec: { a: { b: 1 } } }, { spec: { a: { b: 2 } } })).toEqual([
      { op: 'change', path: ['spec', 'a', 'b'], old: 1, new: 2 },
    ]);
  });

  test('reports an added nested object as one add of the whole object', () => {
    expect(diff({}, { spec: { a: 1, b: 2 } })).toEqual([
      { op: 'add', path: ['spec'], old: undefined, new: { a: 1, b: 2 } },
    ]);
  });

  test('compares arrays as whole values', () => {
    expect(diff({ items: [1, 2, 3] }, { items: [1, 9, 3] })).toEqual([
      { op: 'change', path: ['items'], old: [1, 2, 3], new: [1, 9, 3] },
    ]);
  });

  test('reports an object replaced by a non-object as a change at that path', () => {
    expect(diff({ spec: { a: 1 } }, { spec: 'flat' })).toEqual([
      { op: 'change', path: ['spec'], old: { a: 1 }, new: 'flat' },
    ]);
  });

  test('treats null as a value, not as absence', () => {
    expect(diff({ a: null }, { a: 1 })).toEqual([{ op: 'change', path: ['a'], old: null, new: 1 }]);
    expect(diff({}, { a: null })).toEqual([{ op: 'add', path: ['a'], old: undefined, new: null }]);
  });

  test('reports the root itself when top-level values are not both objects', () => {
    expect(diff(undefined, { a: 1 })).toEqual([
      { op: 'add', path: [], old: undefined, new: { a: 1 } },
    ]);
    expect(diff(1, 2)).toEqual([{ op: 'change', path: [], old: 1, new: 2 }]);
  });

  test('lists changes sorted by path, whatever the key order', () => {
    const old = { spec: { z: 1, a: 1 }, b: 1 };
    const current = { b: 2, spec: { a: 2, z: 2 }, a: 1 };

    expect(diff(old, current).map((item) => item.path.join('.'))).toEqual([
      'a',
      'b',
      'spec.a',
      'spec.z',
    ]);
    expect(diff(old, current)).toEqual(
      diff({ b: 1, spec: { a: 1, z: 1 } }, { a: 1, spec: { z: 2, a: 2 }, b: 2 }),
    );
  });

  test('prefixes paths with the given base path', () => {
    expect(diff({ a: 1 }, { a: 2 }, ['spec'])).toEqual([
      { op: 'change', path: ['spec', 'a'], old: 1, new: 2 },
    ]);
  });
});

describe('narrowDiff', () => {
  const changes: Diff = diff(
    { spec: { size: 1, version: '3.5' }, metadata: { labels: { a: 'x' } } },
    { spec: { size: 3, version: '3.5', tls: true }, metadata: { labels: { a: 'y' } } },
  );

  test('keeps only changes under the field, with paths relative to it', () => {
    expect(narrowDiff(changes, ['spec'])).toEqual([
      { op: 'change', path: ['size'], old: 1, new: 3 },
      { op: 'add', path: ['tls'], old: undefined, new: true },
    ]);
  });

  test('gives an empty path for a change exactly at the field', () => {
    expect(narrowDiff(changes, ['spec', 'size'])).toEqual([
      { op: 'change', path: [], old: 1, new: 3 },
    ]);
  });

  test('is empty when nothing under the field changed', () => {
    expect(narrowDiff(changes, ['spec', 'version'])).toEqual([]);
    expect(narrowDiff(changes, ['status'])).toEqual([]);
  });

  test('does not confuse a field with a sibling sharing its prefix', () => {
    const siblings = diff({ spec: { size: 1, sizeLimit: 1 } }, { spec: { size: 1, sizeLimit: 2 } });
    expect(narrowDiff(siblings, ['spec', 'size'])).toEqual([]);
  });

  test('keeps the whole diff for an empty field', () => {
    expect(narrowDiff(changes, [])).toEqual(changes);
  });

  test('sees the field change when its parent was replaced as a whole', () => {
    const replaced = diff({ spec: { size: 1, other: 1 } }, { spec: [] });
    expect(replaced).toHaveLength(1);

    expect(narrowDiff(replaced, ['spec', 'size'])).toEqual([
      { op: 'remove', path: [], old: 1, new: undefined },
    ]);
  });

  test('sees the field added when its parent was added as a whole', () => {
    const added = diff({}, { spec: { size: 3, other: 1 } });

    expect(narrowDiff(added, ['spec', 'size'])).toEqual([
      { op: 'add', path: [], old: undefined, new: 3 },
    ]);
  });

  test('sees the field removed when its parent was removed as a whole', () => {
    const removed = diff({ spec: { size: 3 } }, {});

    expect(narrowDiff(removed, ['spec', 'size'])).toEqual([
      { op: 'remove', path: [], old: 3, new: undefined },
    ]);
  });

  test('projects a replaced parent onto nested changes below the field', () => {
    const replaced = diff({ spec: 'flat' }, { spec: { tls: { enabled: true, port: 443 } } });

    expect(narrowDiff(replaced, ['spec', 'tls'])).toEqual([
      { op: 'add', path: [], old: undefined, new: { enabled: true, port: 443 } },
    ]);
  });

  test('is empty when the parent was replaced but the field is the same in both', () => {
    const replaced = diff({ spec: { size: 3, a: 1 } }, { spec: 'flat' });
    expect(narrowDiff(replaced, ['status', 'phase'])).toEqual([]);

    const same = diff(undefined, { spec: { size: 3 } });
    expect(narrowDiff(same, ['spec', 'missing'])).toEqual([]);
  });
});
