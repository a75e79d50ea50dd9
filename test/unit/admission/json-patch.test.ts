import { jsonPatchDiff } from '../../../src/framework/admission/json-patch.js';
import type { JsonPatchOp } from '../../../src/framework/api/object-api.js';

/** A minimal RFC 6902 applier (add, remove, replace on objects and array indexes), for checking diffs. */
function applyJsonPatch(document: unknown, ops: JsonPatchOp[]): unknown {
  let root = structuredClone(document);
  for (const { op, path, value } of ops) {
    if (path === '') {
      root = structuredClone(value);
      continue;
    }
    const tokens = path
      .slice(1)
      .split('/')
      .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = tokens.pop()!;
    let parent = root as Record<string, unknown>;
    for (const token of tokens) parent = parent[token] as Record<string, unknown>;
    if (op === 'remove') delete parent[last];
    else parent[last] = structuredClone(value);
  }
  return root;
}

describe('JSON patch diff (RFC 6902)', () => {
  const original = {
    apiVersion: 'example.com/v1',
    metadata: { name: 'w', labels: { app: 'w' }, annotations: { 'example.com/a~b': 'x' } },
    spec: { size: 1, ports: [80, 443], nested: { keep: true, drop: 'me' } },
  };

  test('equal documents need no operation', () => {
    expect(jsonPatchDiff(original, structuredClone(original))).toEqual([]);
  });

  test('new keys are added, gone keys removed, changed values replaced', () => {
    const changed = {
      ...original,
      spec: { size: 2, ports: [80, 443], nested: { keep: true }, extra: { a: 1 } },
    };
    expect(jsonPatchDiff(original, changed)).toEqual([
      { op: 'replace', path: '/spec/size', value: 2 },
      { op: 'remove', path: '/spec/nested/drop' },
      { op: 'add', path: '/spec/extra', value: { a: 1 } },
    ]);
  });

  test('an array that changed is replaced whole', () => {
    const changed = structuredClone(original);
    changed.spec.ports.push(8080);
    expect(jsonPatchDiff(original, changed)).toEqual([
      { op: 'replace', path: '/spec/ports', value: [80, 443, 8080] },
    ]);
  });

  test('keys with / and ~ are escaped as JSON pointers (~1, ~0)', () => {
    const changed = structuredClone(original);
    changed.metadata.annotations = { 'example.com/a~b': 'y' };
    expect(jsonPatchDiff(original, changed)).toEqual([
      { op: 'replace', path: '/metadata/annotations/example.com~1a~0b', value: 'y' },
    ]);
  });

  test('a key holding undefined counts as absent', () => {
    expect(jsonPatchDiff({ a: 1, b: undefined }, { a: 1, c: undefined })).toEqual([]);
    expect(jsonPatchDiff({ a: 1 }, { a: undefined })).toEqual([{ op: 'remove', path: '/a' }]);
  });

  test('the operations applied to the original give the changed document', () => {
    const changed = {
      apiVersion: 'example.com/v1',
      metadata: { name: 'w', labels: { app: 'w', tier: 'gold' }, annotations: {} },
      spec: { size: 3, ports: [443], nested: 'flat', list: [{ a: 1 }] },
      status: { phase: 'New' },
    };
    expect(applyJsonPatch(original, jsonPatchDiff(original, changed))).toEqual(changed);
  });
});
