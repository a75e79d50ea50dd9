import { ObjectMemories } from '../../../src/framework/processing/object-memory.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

const written: KubeObject = { metadata: { uid: 'u1', resourceVersion: '5' } };

describe('per-object memories', () => {
  test('a new object has an empty memory', () => {
    const memory = new ObjectMemories().of('u1');
    expect(memory).toMatchObject({
      seen: false,
      resuming: false,
      failures: 0,
      deletionHandled: false,
      ownWrite: undefined,
      unwritten: undefined,
      refused: undefined,
    });
    expect(memory.warned.size).toBe(0);
  });

  test('a memory that holds only "seen" is kept as that alone after its run, and comes back seen', () => {
    const memories = new ObjectMemories();
    memories.of('u1').seen = true;

    memories.settle('u1');

    expect(memories.records).toBe(0);
    expect(memories.of('u1')).toMatchObject({
      seen: true,
      resuming: false,
      failures: 0,
      deletionHandled: false,
      ownWrite: undefined,
    });
  });

  test.each([
    [
      'a write awaiting its echo',
      (m: ReturnType<ObjectMemories['of']>) =>
        (m.ownWrite = { resourceVersion: '5', body: written, at: 1 }),
    ],
    ['failures', (m: ReturnType<ObjectMemories['of']>) => (m.failures = 2)],
    ['resuming', (m: ReturnType<ObjectMemories['of']>) => (m.resuming = true)],
    ['a handled deletion', (m: ReturnType<ObjectMemories['of']>) => (m.deletionHandled = true)],
    [
      'unwritten results',
      (m: ReturnType<ObjectMemories['of']>) => (m.unwritten = { state: 's', results: new Map() }),
    ],
    [
      'a refused write',
      (m: ReturnType<ObjectMemories['of']>) => (m.refused = { state: 's', attempts: 1 }),
    ],
    ['a warning given', (m: ReturnType<ObjectMemories['of']>) => m.warned.add('digest')],
  ])('a memory holding %s is kept whole', (_what, change) => {
    const memories = new ObjectMemories();
    const memory = memories.of('u1');
    memory.seen = true;
    change(memory);

    memories.settle('u1');

    expect(memories.records).toBe(1);
    expect(memories.of('u1')).toBe(memory);
  });

  test('forgetting an object forgets a seen-only memory too', () => {
    const memories = new ObjectMemories();
    memories.of('u1').seen = true;
    memories.settle('u1');

    memories.forget('u1');

    expect(memories.of('u1').seen).toBe(false);
  });
});
