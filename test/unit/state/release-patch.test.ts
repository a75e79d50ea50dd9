import { Identity } from '../../../src/framework/state/identity.js';
import {
  describeRelease,
  pointerSegment,
  releasePatch,
} from '../../../src/framework/state/release-patch.js';
import { widget } from '../../support/widget-objects.js';

const ID = Identity.DEFAULT;
const OWN = Identity.parse('db-operator.example.com');
const WITH_STATUS = { hasStatusSubresource: true };

/** Applies JSON patch `remove` ops (and skips `test` ops) to a copy of `object`, as the API server would when the tests pass. */
function applied<T>(object: T, ops: { op: string; path: string }[]): T {
  const copy = structuredClone(object) as Record<string, unknown>;
  for (const op of ops.filter((o) => o.op === 'remove')) {
    const segments = op.path
      .slice(1)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = segments.pop()!;
    let parent: unknown = copy;
    for (const segment of segments) parent = (parent as Record<string, unknown>)[segment];
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete (parent as Record<string, unknown>)[last];
  }
  return copy as T;
}

describe('releasing an object from an operator', () => {
  test('an object with nothing of the identity needs no write', () => {
    const clean = widget({
      annotations: { 'example.com/owner': 'team-a' },
      finalizers: ['example.com/cleanup'],
      status: { phase: 'Ready' },
    });
    expect(releasePatch(clean, ID, WITH_STATUS)).toBeUndefined();
  });

  test('the finalizer, every annotation under the prefix and the status record go; the user’s own fields stay', () => {
    const handled = widget({
      annotations: {
        'konductor.dev/last-handled-configuration': '{"spec":{"size":1}}',
        'konductor.dev/Widgets.created': '{"success":true}',
        'konductor.dev/timer.Widgets.tick': '{"last":"2024-05-01T11:00:00Z"}',
        'example.com/owner': 'team-a',
      },
      finalizers: ['example.com/cleanup', 'konductor.dev/finalizer'],
      status: { phase: 'Ready', 'konductor.dev': { progress: {} } },
    });
    const release = releasePatch(handled, ID, { hasStatusSubresource: false })!;
    const after = applied(handled, release.objectOps);
    expect(after.metadata?.annotations).toEqual({ 'example.com/owner': 'team-a' });
    expect(after.metadata?.finalizers).toEqual(['example.com/cleanup']);
    expect(after.status).toEqual({ phase: 'Ready' });
    expect(release.statusPatch).toBeUndefined();
  });

  test('with a status subresource the status record goes in its own merge patch, setting the field to null', () => {
    const release = releasePatch(
      widget({
        status: { phase: 'Ready', 'konductor.dev': { 'last-handled-configuration': '{}' } },
      }),
      ID,
      WITH_STATUS,
    )!;
    expect(release.statusPatch).toEqual({ status: { 'konductor.dev': null } });
    expect(release.objectOps).toEqual([]);
  });

  test('each copy of the finalizer is removed after a test of that very entry, after the annotations', () => {
    const release = releasePatch(
      widget({
        annotations: { 'konductor.dev/x': '1' },
        finalizers: ['konductor.dev/finalizer', 'a/b', 'konductor.dev/finalizer'],
      }),
      ID,
      WITH_STATUS,
    )!;
    expect(release.objectOps).toEqual([
      { op: 'remove', path: '/metadata/annotations/konductor.dev~1x' },
      { op: 'test', path: '/metadata/finalizers/2', value: 'konductor.dev/finalizer' },
      { op: 'remove', path: '/metadata/finalizers/2' },
      { op: 'test', path: '/metadata/finalizers/0', value: 'konductor.dev/finalizer' },
      { op: 'remove', path: '/metadata/finalizers/0' },
    ]);
  });

  test('an operator with its own identity removes its marker and bookkeeping, and leaves the default identity’s alone', () => {
    const shared = widget({
      annotations: {
        'db-operator.example.com/konductor-managed': 'yes',
        'db-operator.example.com/last-handled-configuration': '{}',
        'konductor.dev/last-handled-configuration': '{}',
      },
      finalizers: ['konductor.dev/finalizer', 'db-operator.example.com/finalizer'],
      status: { 'konductor.dev': {}, 'db-operator.example.com': {} },
    });
    const release = releasePatch(shared, OWN, { hasStatusSubresource: false })!;
    const after = applied(shared, release.objectOps);
    expect(after.metadata?.annotations).toEqual({
      'konductor.dev/last-handled-configuration': '{}',
    });
    expect(after.metadata?.finalizers).toEqual(['konductor.dev/finalizer']);
    expect(after.status).toEqual({ 'konductor.dev': {} });
  });

  test('an annotation that only starts like the prefix is not the operator’s', () => {
    expect(
      releasePatch(
        widget({ annotations: { 'konductor.dev.example.com/x': '1', 'konductor.devx/y': '2' } }),
        ID,
        WITH_STATUS,
      ),
    ).toBeUndefined();
  });

  test('a status record set to null is still a record to remove (the field is there)', () => {
    expect(
      releasePatch(widget({ status: { 'konductor.dev': null } }), ID, WITH_STATUS)?.statusPatch,
    ).toEqual({ status: { 'konductor.dev': null } });
  });

  test('the user reads what goes in one phrase', () => {
    const release = releasePatch(
      widget({
        annotations: { 'konductor.dev/a': '1', 'konductor.dev/b': '2' },
        finalizers: ['konductor.dev/finalizer'],
        status: { 'konductor.dev': {} },
      }),
      ID,
      WITH_STATUS,
    )!;
    expect(describeRelease(release, ID)).toBe(
      'finalizer konductor.dev/finalizer, 2 annotations, status["konductor.dev"]',
    );
  });

  test('JSON-pointer segments escape ~ before /', () => {
    expect(pointerSegment('a~/b')).toBe('a~0~1b');
  });
});
