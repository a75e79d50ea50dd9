import {
  awaitsDeletion,
  releaseVerdict,
  type HeldObject,
  type ReleaseWorld,
} from '../../../src/framework/runtime/finalizer-release.js';

/**
 * Which objects a stopping operator keeps working for, and whose finalizer it releases once stopped:
 * those no operator instance will come back for. Everything else keeps its finalizer for the next one.
 */

const world = (terminating: string[], ownNamespace?: string): ReleaseWorld => ({
  ownNamespace,
  terminating: new Set(terminating),
});
const deleting = (namespace: string | undefined, name = 'w'): HeldObject => ({
  namespace,
  name,
  deleting: true,
});
const living = (namespace: string | undefined, name = 'w'): HeldObject => ({
  namespace,
  name,
  deleting: false,
});

describe('what a stopping operator does with the objects carrying its finalizer', () => {
  describe('while its own namespace is being deleted', () => {
    const ownGoing = world(['operators'], 'operators');

    test('every object of its own namespace is released, its deletion started or not, and the log says why', () => {
      for (const object of [deleting('operators'), living('operators')]) {
        const verdict = releaseVerdict(object, ownGoing);
        expect(verdict).toEqual({
          release: true,
          why: expect.stringContaining("the operator's own namespace operators is being deleted"),
        });
      }
    });

    test('an object elsewhere whose deletion started is released: nobody will come back to run its delete handlers', () => {
      expect(releaseVerdict(deleting('apps'), ownGoing)).toEqual({
        release: true,
        why: expect.stringContaining('no operator instance will come back'),
      });
      expect(releaseVerdict(deleting(undefined), ownGoing).release).toBe(true);
    });

    test('an object elsewhere that is not being deleted keeps its finalizer', () => {
      expect(releaseVerdict(living('apps'), ownGoing)).toEqual({ release: false });
    });

    test('the operator keeps working for the objects of its namespace, which are deleted next, and for those being deleted', () => {
      expect(awaitsDeletion(living('operators'), ownGoing)).toBe(true);
      expect(awaitsDeletion(deleting('apps'), ownGoing)).toBe(true);
      expect(awaitsDeletion(living('apps'), ownGoing)).toBe(false);
    });
  });

  describe('while its own namespace is healthy (a rolling update, a rescheduled pod)', () => {
    test('an object being deleted in a namespace being deleted is released: the namespace must not wait for a stopped operator', () => {
      expect(releaseVerdict(deleting('team-a'), world(['team-a'], 'operators'))).toEqual({
        release: true,
        why: 'its namespace is being deleted and the operator stopped before its delete handlers finished',
      });
    });

    test('an object being deleted in a healthy namespace keeps its finalizer: the next instance runs its delete handlers', () => {
      expect(releaseVerdict(deleting('team-a'), world([], 'operators'))).toEqual({
        release: false,
      });
      expect(releaseVerdict(deleting(undefined), world(['team-a'], 'operators'))).toEqual({
        release: false,
      });
    });

    test('an object not being deleted keeps its finalizer, even in a namespace being deleted', () => {
      expect(releaseVerdict(living('team-a'), world(['team-a'], 'operators'))).toEqual({
        release: false,
      });
      expect(awaitsDeletion(living('team-a'), world(['team-a'], 'operators'))).toBe(false);
    });

    test('the operator keeps working for every object whose deletion started, wherever it is', () => {
      expect(awaitsDeletion(deleting('team-a'), world([], 'operators'))).toBe(true);
    });
  });

  test('without POD_NAMESPACE only the namespace-being-deleted rule applies', () => {
    expect(releaseVerdict(deleting('team-a'), world(['team-a']))).toMatchObject({ release: true });
    expect(releaseVerdict(living('team-a'), world(['team-a']))).toEqual({ release: false });
    expect(releaseVerdict(deleting('team-b'), world(['team-a']))).toEqual({ release: false });
  });
});
