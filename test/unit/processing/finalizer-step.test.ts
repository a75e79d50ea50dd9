import {
  finalizerStep,
  type FinalizerStep,
  type FinalizerStepInput,
} from '../../../src/framework/processing/finalizer-step.js';

/** An object change handlers want, not being deleted, without our finalizer, needing none. */
function input(overrides: Partial<FinalizerStepInput> = {}): FinalizerStepInput {
  return {
    handled: true,
    held: false,
    deleteHandled: false,
    hasFinalizer: false,
    deleting: false,
    ...overrides,
  };
}

describe('finalizerStep', () => {
  describe('an object nothing wants (the stealth rule)', () => {
    test('is left alone: nothing is written', () => {
      expect(finalizerStep(input({ handled: false }))).toEqual<FinalizerStep>({
        finalizer: 'keep',
        then: 'stop',
      });
    });

    test('has our finalizer removed if it still carries it, or it could never be deleted', () => {
      expect(finalizerStep(input({ handled: false, hasFinalizer: true }))).toEqual<FinalizerStep>({
        finalizer: 'remove',
        then: 'stop',
      });
      expect(
        finalizerStep(input({ handled: false, hasFinalizer: true, deleting: true })),
      ).toEqual<FinalizerStep>({ finalizer: 'remove', then: 'stop' });
    });
  });

  describe('an object change handlers want', () => {
    test('gets our finalizer before its handlers run when a non-optional delete handler wants it', () => {
      expect(finalizerStep(input({ deleteHandled: true }))).toEqual<FinalizerStep>({
        finalizer: 'add',
        then: 'handle',
      });
    });

    test('gets our finalizer when timers or daemons hold it too', () => {
      expect(finalizerStep(input({ held: true }))).toEqual<FinalizerStep>({
        finalizer: 'add',
        then: 'handle',
      });
    });

    test('runs its handlers with no finalizer when nothing needs one (optional delete handlers only, say)', () => {
      expect(finalizerStep(input())).toEqual<FinalizerStep>({ finalizer: 'keep', then: 'handle' });
    });

    test('has a finalizer nothing needs any more removed, then runs its handlers', () => {
      expect(finalizerStep(input({ hasFinalizer: true }))).toEqual<FinalizerStep>({
        finalizer: 'remove',
        then: 'handle',
      });
    });

    test('keeps a finalizer it needs as it is', () => {
      expect(
        finalizerStep(input({ deleteHandled: true, hasFinalizer: true })),
      ).toEqual<FinalizerStep>({ finalizer: 'keep', then: 'handle' });
    });

    test('being deleted, keeps the finalizer as it is: its delete handlers remove it when done', () => {
      expect(
        finalizerStep(input({ deleting: true, deleteHandled: true, hasFinalizer: true })),
      ).toEqual<FinalizerStep>({ finalizer: 'keep', then: 'handle' });
      expect(finalizerStep(input({ deleting: true, hasFinalizer: true }))).toEqual<FinalizerStep>({
        finalizer: 'keep',
        then: 'handle',
      });
      expect(finalizerStep(input({ deleting: true, deleteHandled: true }))).toEqual<FinalizerStep>({
        finalizer: 'keep',
        then: 'handle',
      });
    });
  });

  describe('an object held only by timers or daemons', () => {
    const held = { handled: false, held: true };

    test('gets our finalizer, and no change handler runs', () => {
      expect(finalizerStep(input(held))).toEqual<FinalizerStep>({ finalizer: 'add', then: 'stop' });
      expect(finalizerStep(input({ ...held, hasFinalizer: true }))).toEqual<FinalizerStep>({
        finalizer: 'keep',
        then: 'stop',
      });
    });

    test('is released when being deleted with our finalizer on it: timers and daemons stop, then the finalizer comes off', () => {
      expect(
        finalizerStep(input({ ...held, hasFinalizer: true, deleting: true })),
      ).toEqual<FinalizerStep>({ finalizer: 'keep', then: 'release' });
    });

    test('being deleted without our finalizer, is left alone', () => {
      expect(finalizerStep(input({ ...held, deleting: true }))).toEqual<FinalizerStep>({
        finalizer: 'keep',
        then: 'stop',
      });
    });
  });
});
