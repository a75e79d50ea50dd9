import {
  applyMergePatch,
  emptyPatch,
  isEmptyPatch,
  mergeInto,
  prune,
} from '../../../src/framework/intents/patch.js';

describe('emptyPatch', () => {
  test('has the sections handlers write into', () => {
    expect(emptyPatch()).toEqual({
      metadata: { labels: {}, annotations: {} },
      spec: {},
      status: {},
    });
  });

  test('is a fresh object every time', () => {
    const first = emptyPatch();
    first.status.phase = 'Ready';
    first.metadata.labels.tier = 'gold';

    expect(emptyPatch()).toEqual({
      metadata: { labels: {}, annotations: {} },
      spec: {},
      status: {},
    });
  });

  test('prunes to nothing when untouched', () => {
    expect(prune(emptyPatch())).toBeUndefined();
  });
});

describe('isEmptyPatch', () => {
  test('is true for the patch a handler starts from, and for nested empty objects and undefined fields', () => {
    expect(isEmptyPatch(emptyPatch())).toBe(true);
    expect(isEmptyPatch({})).toBe(true);
    expect(isEmptyPatch({ a: undefined, b: { c: {}, d: undefined } })).toBe(true);
  });

  test('is false once any field is set, at any depth', () => {
    const patch = emptyPatch();
    patch.metadata.labels.tier = 'gold';
    expect(isEmptyPatch(patch)).toBe(false);
  });

  test('counts null (a deletion), arrays and falsy scalars as changes', () => {
    for (const value of [null, [], 0, false, ''])
      expect(isEmptyPatch({ status: { field: value } })).toBe(false);
  });

  test('agrees with prune: empty exactly when prune leaves nothing', () => {
    const patches = [
      {},
      { a: {} },
      { a: { b: null } },
      { a: [] },
      { a: undefined },
      { a: { b: { c: 1 } } },
    ];
    for (const patch of patches) expect(isEmptyPatch(patch)).toBe(prune(patch) === undefined);
  });
});

describe('prune', () => {
  test('drops empty objects, however deep', () => {
    expect(prune({ a: {}, b: { c: { d: {} } }, e: 1 })).toEqual({ e: 1 });
  });

  test('drops undefined values', () => {
    expect(prune({ a: undefined, b: { c: undefined }, d: 'x' })).toEqual({ d: 'x' });
  });

  test('keeps null, which deletes in a merge patch', () => {
    expect(prune({ spec: { size: null }, status: {} })).toEqual({ spec: { size: null } });
  });

  test('keeps falsy values and arrays, empty ones included', () => {
    expect(prune({ a: 0, b: false, c: '', d: [] })).toEqual({ a: 0, b: false, c: '', d: [] });
  });

  test('is undefined when nothing is left', () => {
    expect(prune({})).toBeUndefined();
    expect(prune({ a: undefined, b: {} })).toBeUndefined();
  });

  test('keeps what a handler wrote into an empty patch', () => {
    const patch = emptyPatch();
    patch.status.phase = 'Ready';
    patch.metadata.labels.tier = null;

    expect(prune(patch)).toEqual({
      metadata: { labels: { tier: null } },
      status: { phase: 'Ready' },
    });
  });

  test('does not change its input', () => {
    const input = { a: {}, b: { c: undefined } };
    prune(input);
    expect(input).toEqual({ a: {}, b: { c: undefined } });
    expect(Object.keys(input.b)).toEqual(['c']);
  });
});

describe('applyMergePatch', () => {
  test('sets and replaces values', () => {
    expect(applyMergePatch({ a: 1, b: 2 }, { b: 3, c: 4 })).toEqual({ a: 1, b: 3, c: 4 });
  });

  test('deletes keys patched with null', () => {
    expect(applyMergePatch({ a: 1, b: 2 }, { a: null })).toEqual({ b: 2 });
  });

  test('ignores null for a key that does not exist', () => {
    expect(applyMergePatch({ a: 1 }, { missing: null })).toEqual({ a: 1 });
  });

  test('merges nested objects', () => {
    expect(
      applyMergePatch({ spec: { a: 1, b: { c: 2, d: 3 } } }, { spec: { b: { c: null, e: 4 } } }),
    ).toEqual({
      spec: { a: 1, b: { d: 3, e: 4 } },
    });
  });

  test('replaces arrays as a whole', () => {
    expect(applyMergePatch({ items: [1, 2, 3] }, { items: [4] })).toEqual({ items: [4] });
  });

  test('replaces a non-object with a patched object', () => {
    expect(applyMergePatch({ a: 'flat', b: [1] }, { a: { x: 1 }, b: { y: 2 } })).toEqual({
      a: { x: 1 },
      b: { y: 2 },
    });
  });

  test('drops nulls inside a newly created object', () => {
    expect(applyMergePatch({}, { a: { b: null, c: 1 } })).toEqual({ a: { c: 1 } });
  });

  test('treats a non-object target as empty', () => {
    expect(applyMergePatch<unknown>('text', { a: 1 })).toEqual({ a: 1 });
    expect(applyMergePatch<unknown>(undefined, { a: 1 })).toEqual({ a: 1 });
    expect(applyMergePatch<unknown>([1, 2], { a: 1 })).toEqual({ a: 1 });
  });

  test('matches the RFC 7386 examples', () => {
    const target = {
      title: 'Goodbye!',
      author: { givenName: 'John', familyName: 'Doe' },
      tags: ['example', 'sample'],
      content: 'This will be unchanged',
    };
    const patch = {
      title: 'Hello!',
      phoneNumber: '+01-123-456-7890',
      author: { familyName: null },
      tags: ['example'],
    };

    expect(applyMergePatch(target, patch)).toEqual({
      title: 'Hello!',
      author: { givenName: 'John' },
      tags: ['example'],
      content: 'This will be unchanged',
      phoneNumber: '+01-123-456-7890',
    });
  });

  test('does not mutate the target', () => {
    const target = { spec: { a: 1, nested: { b: 2 } }, list: [1] };
    const copy = structuredClone(target);

    applyMergePatch(target, { spec: { a: null, nested: { b: 3 } }, list: [2] });

    expect(target).toEqual(copy);
  });

  test('does not mutate the patch', () => {
    const patch = { spec: { a: null, nested: { b: 3 } } };
    const copy = structuredClone(patch);

    applyMergePatch({ spec: { a: 1 } }, patch);

    expect(patch).toEqual(copy);
  });
});

describe('mergeInto', () => {
  test('adds keys from the extra patch', () => {
    const into: Record<string, unknown> = { a: 1 };
    mergeInto(into, { b: 2 });
    expect(into).toEqual({ a: 1, b: 2 });
  });

  test('merges nested objects deeply', () => {
    const into: Record<string, unknown> = { status: { phase: 'Ready', detail: { a: 1 } } };
    mergeInto(into, { status: { detail: { b: 2 } } });
    expect(into).toEqual({ status: { phase: 'Ready', detail: { a: 1, b: 2 } } });
  });

  test('lets the later patch win on conflicts', () => {
    const into: Record<string, unknown> = { status: { phase: 'Pending' } };
    mergeInto(into, { status: { phase: 'Ready' } });
    expect(into).toEqual({ status: { phase: 'Ready' } });
  });

  test('keeps a later null, so the merged patch still deletes', () => {
    const into: Record<string, unknown> = { spec: { size: 3 } };
    mergeInto(into, { spec: { size: null } });
    expect(into).toEqual({ spec: { size: null } });
  });

  test('lets a later value replace an earlier null', () => {
    const into: Record<string, unknown> = { spec: { size: null } };
    mergeInto(into, { spec: { size: 5 } });
    expect(into).toEqual({ spec: { size: 5 } });
  });

  test('replaces arrays as a whole', () => {
    const into: Record<string, unknown> = { list: [1, 2] };
    mergeInto(into, { list: [3] });
    expect(into).toEqual({ list: [3] });
  });

  test('replaces a non-object with an object', () => {
    const into: Record<string, unknown> = { a: 'flat' };
    mergeInto(into, { a: { b: 1 } });
    expect(into).toEqual({ a: { b: 1 } });
  });

  test('gives the same result as applying both patches in turn', () => {
    const target = { spec: { a: 1, b: { c: 2 } }, status: { phase: 'Pending' } };
    const first = { spec: { a: 2, b: { d: 3 } } };
    const second = { spec: { b: { c: null } }, status: { phase: 'Ready' } };

    const merged: Record<string, unknown> = {};
    mergeInto(merged, first);
    mergeInto(merged, second);

    expect(applyMergePatch(target, merged)).toEqual(
      applyMergePatch(applyMergePatch(target, first), second),
    );
  });

  test('does not change the extra patch, even through later merges', () => {
    const extra = { status: { detail: { a: 1 } } };
    const into: Record<string, unknown> = {};

    mergeInto(into, extra);
    mergeInto(into, { status: { detail: { b: 2 } } });

    expect(extra).toEqual({ status: { detail: { a: 1 } } });
    expect(into).toEqual({ status: { detail: { a: 1, b: 2 } } });
  });
});
