import { detectCause, type CauseInput } from '../../../src/framework/processing/causes.js';

const ESSENCE = { spec: { size: 3 } };

function input(overrides: Partial<CauseInput> = {}): CauseInput {
  return {
    deletionRequested: false,
    hasFinalizer: true,
    diffBase: ESSENCE,
    essence: ESSENCE,
    resuming: false,
    ...overrides,
  };
}

describe('detectCause', () => {
  test('is free when deletion is requested and our finalizer is not on it', () => {
    expect(detectCause(input({ deletionRequested: true, hasFinalizer: false }))).toEqual({
      reason: 'free',
    });
  });

  test('is free rather than create for a never-handled object being deleted without our finalizer', () => {
    expect(
      detectCause(input({ deletionRequested: true, hasFinalizer: false, diffBase: undefined })),
    ).toEqual({ reason: 'free' });
  });

  test('is delete when deletion is requested and our finalizer is on it', () => {
    expect(detectCause(input({ deletionRequested: true, hasFinalizer: true }))).toEqual({
      reason: 'delete',
    });
  });

  test('is delete rather than create or update while deletion is requested', () => {
    expect(detectCause(input({ deletionRequested: true, diffBase: undefined }))).toEqual({
      reason: 'delete',
    });
    expect(detectCause(input({ deletionRequested: true, essence: { spec: { size: 5 } } }))).toEqual(
      { reason: 'delete' },
    );
  });

  test('is create when no diff-base is stored', () => {
    expect(detectCause(input({ diffBase: undefined }))).toEqual({ reason: 'create' });
  });

  test('is create rather than resume for a never-handled object seen in a listing', () => {
    expect(detectCause(input({ diffBase: undefined, resuming: true }))).toEqual({
      reason: 'create',
    });
  });

  test('is create whether or not our finalizer is on it yet', () => {
    expect(detectCause(input({ diffBase: undefined, hasFinalizer: false }))).toEqual({
      reason: 'create',
    });
  });

  test('is resume when unchanged and first seen through a listing', () => {
    expect(detectCause(input({ resuming: true }))).toEqual({ reason: 'resume' });
  });

  test('is noop when unchanged and not resuming', () => {
    expect(detectCause(input())).toEqual({ reason: 'noop' });
  });

  test('is noop for an equal essence with a different key order', () => {
    expect(
      detectCause(
        input({
          diffBase: { a: 1, spec: { x: 1, y: 2 } },
          essence: { spec: { y: 2, x: 1 }, a: 1 },
        }),
      ),
    ).toEqual({
      reason: 'noop',
    });
  });

  test('is update with old, new and the diff when the essence changed', () => {
    const changed = { spec: { size: 5 } };

    expect(detectCause(input({ essence: changed }))).toEqual({
      reason: 'update',
      old: ESSENCE,
      new: changed,
      diff: [{ op: 'change', path: ['spec', 'size'], old: 3, new: 5 }],
    });
  });

  test('is update rather than resume when the essence changed while the operator was down', () => {
    expect(detectCause(input({ essence: { spec: { size: 5 } }, resuming: true }))).toMatchObject({
      reason: 'update',
    });
  });
});
