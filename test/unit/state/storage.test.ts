import { chooseDiffBase, chooseProgress } from '../../../src/framework/state/bookkeeping.js';
import { parseFieldPath } from '../../../src/framework/objects/field-path.js';
import { essenceOf, serializeDiffBase } from '../../../src/framework/state/essence.js';
import { Identity } from '../../../src/framework/state/identity.js';
import {
  changeTag,
  serializeProgress,
  type ProgressRecord,
} from '../../../src/framework/state/progress.js';
import {
  InvalidStorageError,
  itemLocation,
  parseStorage,
  statusValues,
  storedText,
  DIFF_BASE,
} from '../../../src/framework/state/storage.js';
import { widget } from '../../support/widget-objects.js';

const ID = Identity.DEFAULT;
const OWN = Identity.parse('db-operator.example.com');
const OLD_BASE = serializeDiffBase({ spec: { size: 1 } }, 'uid-1');
const NEW_BASE = serializeDiffBase({ spec: { size: 2 } }, 'uid-1');

/** A widget whose bookkeeping is in the status under the default identity's field. */
function inStatus(section: unknown, spec = { size: 1 }): ReturnType<typeof widget> {
  return widget({ spec, status: { phase: 'Ready', 'konductor.dev': section } });
}

describe('storage names', () => {
  test('annotations and status are the two storages', () => {
    expect(parseStorage('annotations')).toBe('annotations');
    expect(parseStorage('status')).toBe('status');
  });

  test('anything else is refused, naming the value and the choices', () => {
    expect(() => parseStorage('etcd')).toThrow(InvalidStorageError);
    expect(() => parseStorage('etcd')).toThrow(
      'the storage "etcd" is not one of annotations, status',
    );
  });

  test('the status field of an operator is its identity: konductor.dev for the default one', () => {
    expect(ID.statusKey).toBe('konductor.dev');
    expect(OWN.statusKey).toBe('db-operator.example.com');
  });
});

describe('status storage layout', () => {
  test('the diff-base is one JSON string and progress records are strings by handler name, under status["<identity>"]', () => {
    const values = statusValues(ID, {
      diffBase: OLD_BASE,
      progress: new Map([['Handlers.created', '{"retries":1}']]),
    });
    expect(values).toEqual({
      'konductor.dev': {
        'last-handled-configuration': OLD_BASE,
        progress: { 'Handlers.created': '{"retries":1}' },
      },
    });
  });

  test('nothing to write is no status at all', () => {
    expect(statusValues(ID, { progress: new Map() })).toBeUndefined();
  });

  test('records are found where a user looks for them with kubectl', () => {
    expect(itemLocation(ID, 'status', DIFF_BASE)).toBe(
      'status["konductor.dev"]["last-handled-configuration"]',
    );
    expect(itemLocation(ID, 'status', { handlerId: 'Handlers.created' })).toBe(
      'status["konductor.dev"].progress["Handlers.created"]',
    );
    expect(itemLocation(ID, 'annotations', DIFF_BASE)).toBe(
      'annotation konductor.dev/last-handled-configuration',
    );
  });

  test.each([
    ['a section that is not an object', 'forged', 'status["konductor.dev"] is not an object'],
    [
      'a diff-base that is not a string',
      { 'last-handled-configuration': { spec: {} } },
      'not a string',
    ],
  ])('%s is a problem, never a throw', (_, section, problem) => {
    expect(storedText(inStatus(section), ID, 'status', DIFF_BASE)).toEqual({ problem });
  });

  test('progress that is not an object, or a record that is not a string, is a problem', () => {
    expect(storedText(inStatus({ progress: [1] }), ID, 'status', { handlerId: 'h' })).toEqual({
      problem: 'progress is not an object',
    });
    expect(storedText(inStatus({ progress: { h: 7 } }), ID, 'status', { handlerId: 'h' })).toEqual({
      problem: 'not a string',
    });
  });

  test('our status field is no part of the essence, even for a handler watching all of status', () => {
    const body = inStatus({ 'last-handled-configuration': OLD_BASE });
    expect(essenceOf(body, [parseFieldPath('status')], ID)).toEqual({
      spec: { size: 1 },
      status: { phase: 'Ready' },
    });
  });
});

describe('reading the diff-base from both places', () => {
  test('status storage reads the status first', () => {
    const body = {
      ...inStatus({ 'last-handled-configuration': NEW_BASE }),
      metadata: { ...widget().metadata, annotations: { [ID.diffBaseKey]: OLD_BASE } },
    };
    expect(chooseDiffBase(body, ID, 'status')).toMatchObject({
      essence: { spec: { size: 2 } },
      place: 'status',
      raw: NEW_BASE,
    });
  });

  test('after a switch, the diff-base of the other place counts: no object is handled as new', () => {
    const body = widget({ annotations: { [ID.diffBaseKey]: OLD_BASE } });
    expect(chooseDiffBase(body, ID, 'status')).toMatchObject({
      essence: { spec: { size: 1 } },
      place: 'annotations',
      raw: OLD_BASE,
    });
    const other = inStatus({ 'last-handled-configuration': OLD_BASE });
    expect(chooseDiffBase(other, ID, 'annotations')).toMatchObject({
      essence: { spec: { size: 1 } },
      place: 'status',
    });
  });

  test('when both places hold one, the one naming the other as superseded counts, whichever storage is configured', () => {
    const newer = serializeDiffBase({ spec: { size: 2 } }, 'uid-1', changeTag(OLD_BASE));
    const body = {
      ...inStatus({ 'last-handled-configuration': newer }),
      metadata: { ...widget().metadata, annotations: { [ID.diffBaseKey]: OLD_BASE } },
    };
    expect(chooseDiffBase(body, ID, 'annotations').essence).toEqual({ spec: { size: 2 } });
    expect(chooseDiffBase(body, ID, 'status').essence).toEqual({ spec: { size: 2 } });
  });

  test('an unusable record in one place is reported, and the other place still counts', () => {
    const body = {
      ...inStatus('forged'),
      metadata: { ...widget().metadata, annotations: { [ID.diffBaseKey]: OLD_BASE } },
    };
    const choice = chooseDiffBase(body, ID, 'status');
    expect(choice.essence).toEqual({ spec: { size: 1 } });
    expect(choice.problems).toEqual([
      {
        place: 'status',
        item: DIFF_BASE,
        raw: '',
        problem: 'status["konductor.dev"] is not an object',
      },
    ]);
  });
});

describe('reading progress from both places', () => {
  const started = '2024-05-01T12:00:00.000Z';
  const pending: ProgressRecord = {
    started,
    purpose: 'update',
    base: 'abcdefabcdef',
    retries: 1,
    delayed: '2024-05-01T12:00:01.000Z',
  };
  const further: ProgressRecord = { ...pending, retries: 2 };

  function both(
    inAnnotations: ProgressRecord,
    inStatusField: ProgressRecord,
  ): ReturnType<typeof widget> {
    return {
      ...inStatus({ progress: { h: serializeProgress(inStatusField) } }),
      metadata: {
        ...widget().metadata,
        annotations: { [ID.progressKey('h')]: serializeProgress(inAnnotations) },
      },
    };
  }

  test('a record only in the other place counts (a retry carries on after a switch)', () => {
    const body = widget({ annotations: { [ID.progressKey('h')]: serializeProgress(pending) } });
    expect(chooseProgress(body, ID, 'status', 'h')).toMatchObject({
      record: pending,
      place: 'annotations',
    });
  });

  test('of two records of the same change, the one further on counts, wherever it is', () => {
    expect(chooseProgress(both(further, pending), ID, 'status', 'h').record).toEqual(further);
    expect(chooseProgress(both(pending, further), ID, 'annotations', 'h').record).toEqual(further);
  });

  test("a record of the current change counts over another change's", () => {
    const stale: ProgressRecord = { ...further, base: '000000000000', retries: 5 };
    const belongs = (record: ProgressRecord): boolean => record.base === pending.base;
    expect(chooseProgress(both(pending, stale), ID, 'status', 'h', belongs).record).toEqual(
      pending,
    );
  });
});
