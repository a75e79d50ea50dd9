import {
  essenceOf,
  inspectDiffBase,
  readDiffBase,
  serializeDiffBase,
} from '../../../src/framework/state/essence.js';
import { DIFF_BASE_KEY } from '../../../src/framework/state/keys.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

function cluster(overrides: Partial<KubeObject> = {}): KubeObject {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Cluster',
    metadata: {
      name: 'demo',
      namespace: 'default',
      uid: '1234',
      resourceVersion: '100',
      generation: 2,
      creationTimestamp: '2024-01-01T00:00:00Z',
      managedFields: [{ manager: 'kubectl' }],
      finalizers: ['konductor.dev/finalizer'],
      labels: { app: 'demo' },
      annotations: {
        'team.example.com/owner': 'ops',
        'konductor.dev/Cluster.create': '{"success":true}',
        [DIFF_BASE_KEY]: '{}',
        'kubectl.kubernetes.io/last-applied-configuration': '{"spec":{}}',
      },
    },
    spec: { size: 3 },
    status: { phase: 'Running' },
    ...overrides,
  };
}

describe('essenceOf', () => {
  test('keeps the body, labels and non-framework annotations only', () => {
    expect(essenceOf(cluster())).toEqual({
      metadata: { labels: { app: 'demo' }, annotations: { 'team.example.com/owner': 'ops' } },
      spec: { size: 3 },
    });
  });

  test('drops apiVersion, kind and status', () => {
    const essence = essenceOf(cluster());
    expect(essence).not.toHaveProperty('apiVersion');
    expect(essence).not.toHaveProperty('kind');
    expect(essence).not.toHaveProperty('status');
  });

  test('keeps top-level fields other than spec', () => {
    expect(essenceOf({ kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '1' } })).toEqual({
      data: { a: '1' },
    });
  });

  test('drops framework annotations and kubectl last-applied-configuration', () => {
    const annotations = essenceOf(cluster()).metadata as Record<string, unknown>;
    expect(annotations.annotations).toEqual({ 'team.example.com/owner': 'ops' });
  });

  test('omits annotations when only ignored ones are present', () => {
    const object = cluster();
    object.metadata!.annotations = {
      [DIFF_BASE_KEY]: '{}',
      'kubectl.kubernetes.io/last-applied-configuration': '{}',
    };
    expect(essenceOf(object)).toEqual({ metadata: { labels: { app: 'demo' } }, spec: { size: 3 } });
  });

  test('leaves out the shard labels, so an object moving between replicas is no change', () => {
    const object = cluster();
    object.metadata!.labels = {
      app: 'demo',
      'konductor.dev/shard': 'replica-a',
      'konductor.dev/drain': 'true',
    };
    expect(essenceOf(object).metadata).toMatchObject({ labels: { app: 'demo' } });
  });

  test('keeps the other labels under the identity’s prefix: they are the user’s', () => {
    const object = cluster();
    object.metadata!.labels = { 'konductor.dev/team': 'ops' };
    expect(essenceOf(object).metadata).toMatchObject({ labels: { 'konductor.dev/team': 'ops' } });
  });

  test('omits empty labels', () => {
    const object = cluster();
    object.metadata!.labels = {};
    expect(essenceOf(object).metadata).toEqual({
      annotations: { 'team.example.com/owner': 'ops' },
    });
  });

  test('omits metadata when neither labels nor annotations are left', () => {
    expect(
      essenceOf({
        metadata: { name: 'x', labels: {}, annotations: { 'konductor.dev/a': '{}' } },
        spec: { a: 1 },
      }),
    ).toEqual({
      spec: { a: 1 },
    });
  });

  test('is empty for an object with nothing but server-managed fields', () => {
    expect(
      essenceOf({ apiVersion: 'v1', kind: 'Thing', metadata: { name: 'x', uid: 'u' }, status: {} }),
    ).toEqual({});
  });

  test('adds extra fields back, such as status.phase', () => {
    expect(essenceOf(cluster(), [['status', 'phase']])).toEqual({
      metadata: { labels: { app: 'demo' }, annotations: { 'team.example.com/owner': 'ops' } },
      spec: { size: 3 },
      status: { phase: 'Running' },
    });
  });

  test('adds extra metadata fields next to the labels', () => {
    expect(essenceOf(cluster(), [['metadata', 'generation']]).metadata).toEqual({
      labels: { app: 'demo' },
      annotations: { 'team.example.com/owner': 'ops' },
      generation: 2,
    });
  });

  test('skips extra fields the object does not have', () => {
    expect(essenceOf(cluster(), [['status', 'missing']])).not.toHaveProperty('status');
  });

  test('is equal for objects differing only in server-managed metadata, status and framework annotations', () => {
    const before = cluster();
    const after = cluster({
      metadata: {
        ...before.metadata,
        resourceVersion: '101',
        generation: 3,
        managedFields: [{ manager: 'konductor' }],
        finalizers: [],
        annotations: {
          'team.example.com/owner': 'ops',
          'konductor.dev/Cluster.create': '{"retries":2}',
          'konductor.dev/Cluster.update': '{}',
          [DIFF_BASE_KEY]: '{"spec":{"size":3}}',
          'kubectl.kubernetes.io/last-applied-configuration': '{"spec":{"size":1}}',
        },
      },
      status: { phase: 'Degraded', conditions: [] },
    });

    expect(essenceOf(after)).toEqual(essenceOf(before));
  });

  test('differs when the spec, a label or a user annotation changes', () => {
    const base = essenceOf(cluster());

    expect(essenceOf(cluster({ spec: { size: 5 } }))).not.toEqual(base);
    const relabelled = cluster();
    relabelled.metadata!.labels = { app: 'other' };
    expect(essenceOf(relabelled)).not.toEqual(base);
    const reannotated = cluster();
    reannotated.metadata!.annotations = { 'team.example.com/owner': 'dev' };
    expect(essenceOf(reannotated)).not.toEqual(base);
  });

  test('does not change the object', () => {
    const object = cluster();
    const copy = structuredClone(object);
    essenceOf(object, [
      ['status', 'phase'],
      ['metadata', 'generation'],
    ]);
    expect(object).toEqual(copy);
  });
});

describe('readDiffBase', () => {
  test('is undefined when the object was never handled', () => {
    expect(readDiffBase({ metadata: { name: 'x' } })).toBeUndefined();
    expect(readDiffBase({})).toBeUndefined();
  });

  test('reads the stored essence', () => {
    expect(
      readDiffBase({ metadata: { annotations: { [DIFF_BASE_KEY]: '{"spec":{"size":3}}' } } }),
    ).toEqual({ spec: { size: 3 } });
  });

  test('throws on corrupt JSON', () => {
    expect(() =>
      readDiffBase({ metadata: { annotations: { [DIFF_BASE_KEY]: '{"spec":' } } }),
    ).toThrow();
  });

  test('throws when the stored value is not a JSON object', () => {
    for (const raw of ['null', '[]', '3', '"text"']) {
      expect(() => readDiffBase({ metadata: { annotations: { [DIFF_BASE_KEY]: raw } } })).toThrow(
        'not a JSON object',
      );
    }
  });
});

describe('inspectDiffBase', () => {
  const withDiffBase = (raw: string, uid = 'uid-1') => ({
    metadata: { uid, annotations: { [DIFF_BASE_KEY]: raw } },
  });

  test('reads a diff-base written for this object, without the uid it is bound to', () => {
    expect(
      inspectDiffBase(withDiffBase(serializeDiffBase({ spec: { size: 3 } }, 'uid-1'))),
    ).toEqual({ essence: { spec: { size: 3 } } });
  });

  test('keeps labels beside the uid', () => {
    const raw = serializeDiffBase({ spec: {}, metadata: { labels: { a: 'b' } } }, 'uid-1');
    expect(inspectDiffBase(withDiffBase(raw))).toEqual({
      essence: { spec: {}, metadata: { labels: { a: 'b' } } },
    });
  });

  test('names the other uid when the diff-base was copied from another object', () => {
    expect(inspectDiffBase(withDiffBase(serializeDiffBase({ spec: {} }, 'uid-2')))).toEqual({
      foreign: 'uid-2',
    });
  });

  test('takes a diff-base without a uid (written before uids were stored) as the object’s own', () => {
    expect(inspectDiffBase(withDiffBase('{"spec":{"size":1}}'))).toEqual({
      essence: { spec: { size: 1 } },
    });
  });

  test.each([
    ['{"spec":', 'not JSON'],
    ['[]', 'not a JSON object'],
    ['{"metadata":"x"}', 'metadata is not an object'],
    ['{"metadata":{"uid":7}}', 'metadata.uid is not a string'],
  ])('says why %s is unusable: %s', (raw, problem) => {
    expect(inspectDiffBase(withDiffBase(raw))).toEqual({ problem });
  });
});

describe('serializeDiffBase', () => {
  test('round-trips through readDiffBase', () => {
    const essence = essenceOf(cluster(), [['status', 'phase']]);
    const stored = { metadata: { annotations: { [DIFF_BASE_KEY]: serializeDiffBase(essence) } } };

    expect(readDiffBase(stored)).toEqual(essence);
  });

  test('is compact JSON', () => {
    expect(serializeDiffBase({ spec: { size: 3 } })).toBe('{"spec":{"size":3}}');
  });
});
