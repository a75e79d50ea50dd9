import {
  changePatch,
  type ChangePatchInput,
} from '../../../src/framework/processing/change-patch.js';
import { emptyPatch } from '../../../src/framework/intents/patch.js';
import {
  essenceOf,
  readDiffBase,
  serializeDiffBase,
} from '../../../src/framework/state/essence.js';
import { DIFF_BASE_KEY, progressKey } from '../../../src/framework/state/keys.js';
import { serializeProgress, type ProgressRecord } from '../../../src/framework/state/progress.js';
import { Identity } from '../../../src/framework/state/identity.js';
import { widget } from '../../support/widget-objects.js';
import { handled } from './change-processor-harness.js';

const PENDING: ProgressRecord = {
  started: '2024-05-01T12:00:00.000Z',
  purpose: 'create',
  retries: 1,
  delayed: '2024-05-01T12:00:01.000Z',
};
const FAILED: ProgressRecord = {
  started: '2024-05-01T12:00:00.000Z',
  purpose: 'create',
  failure: true,
  retries: 1,
  message: 'boom',
};

function input(overrides: Partial<ChangePatchInput> = {}): ChangePatchInput {
  return {
    body: widget(),
    patches: [],
    reason: 'create',
    handlerIds: ['a', 'b'],
    selectedIds: ['a'],
    records: new Map(),
    done: true,
    blocked: false,
    extraFields: [],
    ...overrides,
  };
}

function annotationsOf(patch: Record<string, unknown>): Record<string, string | null> {
  return ((patch.metadata as Record<string, unknown> | undefined)?.annotations ?? {}) as Record<
    string,
    string | null
  >;
}

describe('changePatch', () => {
  test("merges the handlers' patches in the order they ran", () => {
    const first = emptyPatch();
    first.spec.size = 2;
    first.status.phase = 'Pending';
    const second = emptyPatch();
    second.status.phase = 'Ready';

    const patch = changePatch(input({ patches: [first, second] }));

    expect(patch.spec).toEqual({ size: 2 });
    expect(patch.status).toEqual({ phase: 'Ready' });
  });

  test('once done, stores the diff-base of the object as the handlers left it, so their own writes are no change', () => {
    const grow = emptyPatch();
    grow.spec.size = 5;

    const patch = changePatch(input({ patches: [grow] }));

    expect(
      readDiffBase(widget({ annotations: annotationsOf(patch) as Record<string, string> })),
    ).toEqual({ spec: { size: 5 } });
  });

  test('an unchanged diff-base is not written again', () => {
    const body = handled(widget());

    expect(annotationsOf(changePatch(input({ body, reason: 'resume' })))).not.toHaveProperty([
      DIFF_BASE_KEY,
    ]);
  });

  test("while the cause is open, writes the selected handlers' changed records, and no diff-base", () => {
    const body = widget({ annotations: { [progressKey('a')]: serializeProgress(PENDING) } });
    const records = new Map([['a', { ...PENDING, retries: 2 }]]);

    const annotations = annotationsOf(changePatch(input({ body, records, done: false })));

    expect(annotations).toEqual({
      [progressKey('a')]: serializeProgress({ ...PENDING, retries: 2 }),
    });
  });

  test('once done, purges every progress record except final failures, which stay for users to read', () => {
    const body = widget({
      annotations: {
        [progressKey('a')]: serializeProgress(PENDING),
        [progressKey('b')]: serializeProgress(PENDING),
      },
    });
    const records = new Map([['a', FAILED]]);

    const annotations = annotationsOf(changePatch(input({ body, records })));

    expect(annotations[progressKey('a')]).toBe(serializeProgress(FAILED));
    expect(annotations[progressKey('b')]).toBeNull();
  });

  test('a resume keeps the final failures of earlier changes: a restart is no change', () => {
    const body = handled(
      widget({ annotations: { [progressKey('b')]: serializeProgress(FAILED) } }),
    );

    expect(annotationsOf(changePatch(input({ body, reason: 'resume' })))).toEqual({});
  });

  test('a finished deletion writes no records and no diff-base; a blocked one keeps its failure for users', () => {
    const records = new Map([['a', FAILED]]);

    expect(annotationsOf(changePatch(input({ reason: 'delete', records })))).toEqual({});
    expect(annotationsOf(changePatch(input({ reason: 'delete', records, blocked: true })))).toEqual(
      { [progressKey('a')]: serializeProgress(FAILED) },
    );
  });
});

describe('changePatch under an identity of its own', () => {
  const alpha = Identity.parse('alpha.example.com');

  test('writes the diff-base under its identity, with its marker', () => {
    const annotations = annotationsOf(changePatch(input({ identity: alpha })));
    expect(Object.keys(annotations).sort()).toEqual(
      [alpha.diffBaseKey, alpha.managedMarker].sort(),
    );
    expect(annotations[alpha.managedMarker!]).toBe('yes');
  });

  test('writes pending progress under its identity, with its marker', () => {
    const records = new Map([['a', PENDING]]);
    const annotations = annotationsOf(
      changePatch(input({ identity: alpha, records, done: false })),
    );
    expect(annotations).toEqual({
      [alpha.progressKey('a')]: serializeProgress(PENDING),
      [alpha.managedMarker!]: 'yes',
    });
  });

  test('writes no marker the object already has', () => {
    const body = widget({ annotations: { [alpha.managedMarker!]: 'yes' } });
    expect(annotationsOf(changePatch(input({ identity: alpha, body })))).not.toHaveProperty([
      alpha.managedMarker!,
    ]);
  });

  test('writes no marker with a purge alone', () => {
    const diffBase = serializeDiffBase(essenceOf(widget(), [], alpha));
    const body = widget({
      annotations: {
        [alpha.progressKey('a')]: serializeProgress(PENDING),
        [alpha.diffBaseKey]: diffBase,
      },
    });
    expect(annotationsOf(changePatch(input({ identity: alpha, body, reason: 'update' })))).toEqual({
      [alpha.progressKey('a')]: null,
    });
  });

  test("leaves the default identity's keys alone", () => {
    const body = widget({ annotations: { [progressKey('a')]: serializeProgress(PENDING) } });
    expect(annotationsOf(changePatch(input({ identity: alpha, body })))).not.toHaveProperty([
      progressKey('a'),
    ]);
  });
});
