import { progressKey } from '../../../src/framework/state/keys.js';
import {
  delayRemainingMs,
  isFinished,
  readProgress,
  serializeProgress,
  type ProgressRecord,
} from '../../../src/framework/state/progress.js';
import type { KubeObject } from '../../../src/framework/watching/events.js';

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
    const record: ProgressRecord = { started: '2024-01-01T00:00:00.000Z', retries: 2, purpose: 'update', message: 'boom' };
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
    for (const raw of ['null', '[]', '1', '"done"', 'true']) expect(readProgress(withProgress(raw), HANDLER)).toBeUndefined();
  });
});

describe('serializeProgress', () => {
  test('omits undefined fields', () => {
    expect(serializeProgress({ retries: 1, message: undefined, success: undefined })).toBe('{"retries":1}');
  });

  test('round-trips through readProgress', () => {
    const record: ProgressRecord = { started: '2024-01-01T00:00:00.000Z', delayed: '2024-01-01T00:01:00.000Z', retries: 1, failure: false };
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
    expect(isFinished({ retries: 3, delayed: '2024-01-01T00:00:00Z', success: false, failure: false })).toBe(false);
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
