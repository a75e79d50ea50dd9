import {
  changePatch,
  type ChangePatchInput,
} from '../../../src/framework/processing/change-patch.js';
import { writePatch } from '../../../src/framework/processing/patch-writer.js';
import { emptyPatch } from '../../../src/framework/intents/patch.js';
import { chooseDiffBase } from '../../../src/framework/state/bookkeeping.js';
import { serializeDiffBase } from '../../../src/framework/state/essence.js';
import { Identity } from '../../../src/framework/state/identity.js';
import {
  changeTag,
  serializeProgress,
  type ProgressRecord,
} from '../../../src/framework/state/progress.js';
import { widget, widgetResource } from '../../support/widget-objects.js';
import { FakeObjectApi } from './fake-object-api.js';

const ID = Identity.DEFAULT;
const PENDING: ProgressRecord = {
  started: '2024-05-01T12:00:00.000Z',
  purpose: 'create',
  retries: 1,
  delayed: '2024-05-01T12:00:01.000Z',
};
const HANDLED = serializeDiffBase({ spec: { size: 1 } }, 'uid-1');

function input(overrides: Partial<ChangePatchInput> = {}): ChangePatchInput {
  return {
    body: widget(),
    patches: [],
    reason: 'create',
    handlerIds: ['a'],
    selectedIds: ['a'],
    records: new Map(),
    done: true,
    blocked: false,
    extraFields: [],
    storage: 'status',
    ...overrides,
  };
}

function ready(): ReturnType<typeof emptyPatch> {
  const patch = emptyPatch();
  patch.status.phase = 'Ready';
  return patch;
}

const annotations = (patch: Record<string, unknown>): Record<string, unknown> =>
  ((patch.metadata as Record<string, unknown> | undefined)?.annotations ?? {}) as Record<
    string,
    unknown
  >;
const section = (patch: Record<string, unknown>): Record<string, unknown> | undefined =>
  (patch.status as Record<string, Record<string, unknown>> | undefined)?.['konductor.dev'];

describe('changePatch with status storage', () => {
  test("a create handler's status and the diff-base are one status patch, with no annotation", () => {
    const patch = changePatch(input({ patches: [ready()] }));

    expect(patch.status).toEqual({
      phase: 'Ready',
      'konductor.dev': { 'last-handled-configuration': HANDLED },
    });
    expect(annotations(patch)).toEqual({});
  });

  test('a handler that writes nothing leaves only the diff-base in the status', () => {
    expect(changePatch(input()).status).toEqual({
      'konductor.dev': { 'last-handled-configuration': HANDLED },
    });
  });

  test('a pending handler has its record under status["<identity>"].progress', () => {
    const patch = changePatch(input({ done: false, records: new Map([['a', PENDING]]) }));

    expect(section(patch)).toEqual({ progress: { a: serializeProgress(PENDING) } });
    expect(annotations(patch)).toEqual({});
  });

  test('once done, records in the status are removed', () => {
    const body = widget({
      status: { 'konductor.dev': { progress: { a: serializeProgress(PENDING) } } },
    });
    expect(section(changePatch(input({ body })))).toEqual({
      'last-handled-configuration': HANDLED,
      progress: { a: null },
    });
  });

  test('an identity of its own writes no marker annotation: status keys are nobody else’s essence', () => {
    const own = Identity.parse('db-operator.example.com');
    const patch = changePatch(input({ identity: own }));

    expect(annotations(patch)).toEqual({});
    expect(Object.keys(patch.status as object)).toEqual(['db-operator.example.com']);
  });
});

describe('switching storage without re-running handlers or extra writes', () => {
  test('an object handled under annotations, unchanged, resumes under status storage with nothing to write', () => {
    const body = widget({ annotations: { [ID.diffBaseKey]: HANDLED } });

    const patch = changePatch(input({ body, reason: 'resume' }));

    expect(section(patch)).toBeUndefined();
    expect(annotations(patch)).toEqual({});
  });

  test('a change handled under status storage leaves the old annotation when nothing else writes the object, and names it as superseded', () => {
    const body = widget({ spec: { size: 2 }, annotations: { [ID.diffBaseKey]: HANDLED } });

    const patch = changePatch(input({ body, reason: 'update' }));

    expect(annotations(patch)).toEqual({});
    const written = String(section(patch)?.['last-handled-configuration']);
    expect(JSON.parse(written)).toMatchObject({ metadata: { supersedes: changeTag(HANDLED) } });
    // So the new one counts even with annotation storage again.
    const after = {
      ...body,
      status: { 'konductor.dev': { 'last-handled-configuration': written } },
    };
    expect(chooseDiffBase(after, ID, 'annotations').essence).toEqual({ spec: { size: 2 } });
  });

  test('the old annotations are removed in the write of the object the handlers make anyway', () => {
    const body = widget({
      spec: { size: 2 },
      annotations: { [ID.diffBaseKey]: HANDLED, [ID.progressKey('a')]: serializeProgress(PENDING) },
    });
    const label = emptyPatch();
    label.metadata.labels.tier = 'gold';

    const patch = changePatch(input({ body, reason: 'update', patches: [label] }));

    expect(annotations(patch)).toEqual({ [ID.diffBaseKey]: null, [ID.progressKey('a')]: null });
    expect(JSON.parse(String(section(patch)?.['last-handled-configuration']))).not.toHaveProperty([
      'metadata',
      'supersedes',
    ]);
  });

  test('back to annotation storage: the old status record is removed in the status write the handlers make anyway', () => {
    const body = widget({
      spec: { size: 2 },
      status: { 'konductor.dev': { 'last-handled-configuration': HANDLED } },
    });

    const patch = changePatch(
      input({ body, reason: 'update', patches: [ready()], storage: 'annotations' }),
    );

    expect(patch.status).toEqual({
      phase: 'Ready',
      'konductor.dev': { 'last-handled-configuration': null },
    });
    expect(annotations(patch)).toHaveProperty([ID.diffBaseKey]);
  });

  test('a pending record read from the other place is not copied while it stays as it is', () => {
    const body = widget({ annotations: { [ID.progressKey('a')]: serializeProgress(PENDING) } });

    const patch = changePatch(input({ body, done: false, records: new Map([['a', PENDING]]) }));

    expect(patch.status).toBeUndefined();
  });
});

describe('writePatch with status storage', () => {
  test('the status write carrying the bookkeeping goes last, after the handlers’ write of the object', async () => {
    const api = new FakeObjectApi(widget(), widgetResource);

    await writePatch(
      api.asObjectApi(),
      api.object,
      { spec: { size: 2 }, status: { phase: 'Ready' } },
      { last: 'status' },
    );

    expect(
      api.writes.map((write) => ('subresource' in write && write.subresource) || 'object'),
    ).toEqual(['object', 'status']);
  });
});
