import { progressKey } from '../../../src/framework/state/keys.js';
import {
  capMessage,
  changeTag,
  delayRemainingMs,
  isFinished,
  MAX_PROGRESS_MESSAGE_LENGTH,
  parseProgress,
  readProgress,
  serializeProgress,
  type ProgressRecord,
} from '../../../src/framework/state/progress.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

const HANDLER = 'Cluster.reconcile';

function withProgress(raw: string, handlerId = HANDLER): KubeObject {
  return { metadata: { name: 'x', annotations: { [progressKey(handlerId)]: raw } } };
}

describe('readProgress', () => {
  test('is undefined when the handler has no record', () => {
    expect(readProgress({ metadata: { name: 'x' } }, HANDLER)).toBeUndefined();
    expect(readProgress(withProgress('{}', 'Other.handler'), HANDLER)).toBeUndefined();
  });

  test('reads the record from the handler’s annotation', () => {
    const record: ProgressRecord = {
      started: '2024-01-01T00:00:00.000Z',
      retries: 2,
      purpose: 'update',
      message: 'boom',
    };
    expect(readProgress(withProgress(JSON.stringify(record)), HANDLER)).toEqual(record);
  });

  test('finds the record of a field handler under its rewritten key', () => {
    const id = 'Cluster.resize/spec.size';
    expect(readProgress(withProgress('{"success":true}', id), id)).toEqual({ success: true });
  });

  test('reads corrupt JSON as undefined', () => {
    expect(readProgress(withProgress('{"retries":'), HANDLER)).toBeUndefined();
    expect(readProgress(withProgress(''), HANDLER)).toBeUndefined();
  });

  test('reads JSON that is not an object as undefined', () => {
    for (const raw of ['null', '[]', '1', '"done"', 'true'])
      expect(readProgress(withProgress(raw), HANDLER)).toBeUndefined();
  });
});

describe('parseProgress', () => {
  test('accepts every field the framework writes', () => {
    const record: ProgressRecord = {
      started: '2024-01-01T00:00:00.000Z',
      stopped: '2024-01-01T00:00:01.000Z',
      delayed: '2024-01-01T00:01:00Z',
      purpose: 'delete',
      base: '0123456789ab',
      retries: 3,
      success: false,
      failure: true,
      message: 'boom',
    };
    expect(parseProgress(JSON.stringify(record))).toEqual({ record });
  });

  test.each([
    ['{"started":"garbage"}', 'started is not an ISO-8601 UTC time'],
    ['{"delayed":"2024-13-45T99:00:00Z"}', 'delayed is not an ISO-8601 UTC time'],
    ['{"stopped":12}', 'stopped is not an ISO-8601 UTC time'],
    ['{"retries":"x"}', 'retries is not a non-negative integer'],
    ['{"retries":-1}', 'retries is not a non-negative integer'],
    ['{"retries":1.5}', 'retries is not a non-negative integer'],
    ['{"purpose":"destroy"}', 'purpose is not one of create, update, delete, resume'],
    ['{"base":"../../x"}', 'base is not a change tag'],
    ['{"success":"yes"}', 'success is not a boolean'],
    ['{"failure":1}', 'failure is not a boolean'],
    ['{"message":{"text":"x"}}', 'message is not a string'],
    ['[]', 'not a JSON object'],
    ['{"retries":', 'not JSON'],
  ])('refuses %s: %s', (raw, problem) => {
    expect(parseProgress(raw)).toEqual({ problem });
  });

  test('drops fields it does not know', () => {
    expect(parseProgress('{"retries":1,"extra":"x"}')).toEqual({ record: { retries: 1 } });
  });

  test('caps a long message', () => {
    const { record } = parseProgress(JSON.stringify({ message: 'y'.repeat(10_000) }));
    expect(record?.message?.length).toBe(MAX_PROGRESS_MESSAGE_LENGTH);
  });
});

describe('capMessage', () => {
  test('keeps a short message as it is', () => {
    expect(capMessage('boom')).toBe('boom');
  });

  test('cuts a long message to the limit and says so', () => {
    const capped = capMessage('z'.repeat(MAX_PROGRESS_MESSAGE_LENGTH + 1));
    expect(capped).toHaveLength(MAX_PROGRESS_MESSAGE_LENGTH);
    expect(capped.endsWith('… (truncated)')).toBe(true);
  });
});

describe('changeTag', () => {
  test('tags a never-handled object by its uid, so records of another object never match', () => {
    expect(changeTag(undefined, 'uid-a')).toMatch(/^new\.[0-9a-f]{8}$/);
    expect(changeTag(undefined, 'uid-a')).not.toBe(changeTag(undefined, 'uid-b'));
  });

  test('tags a handled object by its diff-base', () => {
    expect(changeTag('{"spec":{}}', 'uid-a')).toBe(changeTag('{"spec":{}}', 'uid-b'));
    expect(changeTag('{"spec":{}}')).toMatch(/^[0-9a-f]{12}$/);
  });
});

describe('serializeProgress', () => {
  test('omits undefined fields', () => {
    expect(serializeProgress({ retries: 1, message: undefined, success: undefined })).toBe(
      '{"retries":1}',
    );
  });

  test('round-trips through readProgress', () => {
    const record: ProgressRecord = {
      started: '2024-01-01T00:00:00.000Z',
      delayed: '2024-01-01T00:01:00.000Z',
      retries: 1,
      failure: false,
    };
    expect(readProgress(withProgress(serializeProgress(record)), HANDLER)).toEqual(record);
  });
});

describe('isFinished', () => {
  test('is true after success', () => {
    expect(isFinished({ success: true })).toBe(true);
  });

  test('is true after a final failure', () => {
    expect(isFinished({ failure: true, message: 'gave up' })).toBe(true);
  });

  test('is false while retrying', () => {
    expect(
      isFinished({ retries: 3, delayed: '2024-01-01T00:00:00Z', success: false, failure: false }),
    ).toBe(false);
  });

  test('is false without a record', () => {
    expect(isFinished(undefined)).toBe(false);
    expect(isFinished({})).toBe(false);
  });
});

describe('delayRemainingMs', () => {
  const now = Date.parse('2024-01-01T00:00:00.000Z');

  test('is the time left until the delay passes', () => {
    expect(delayRemainingMs({ delayed: '2024-01-01T00:00:30.000Z' }, now)).toBe(30_000);
  });

  test('is 0 once the delay has passed', () => {
    expect(delayRemainingMs({ delayed: '2023-12-31T23:59:00.000Z' }, now)).toBe(0);
    expect(delayRemainingMs({ delayed: '2024-01-01T00:00:00.000Z' }, now)).toBe(0);
  });

  test('is 0 when not delayed', () => {
    expect(delayRemainingMs(undefined, now)).toBe(0);
    expect(delayRemainingMs({ retries: 1 }, now)).toBe(0);
  });

  test('is 0 for an unreadable time', () => {
    expect(delayRemainingMs({ delayed: 'soon' }, now)).toBe(0);
  });
});
