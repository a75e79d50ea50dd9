import {
  COMBINED_PREFIX,
  EventCorrelator,
} from '../../../src/framework/posting/event-correlator.js';
import type { InvolvedObject } from '../../../src/framework/posting/event-types.js';

const widget = (name: string, uid = `uid-${name}`): InvolvedObject => ({
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name, namespace: 'default', uid },
});
const T0 = Date.parse('2024-05-01T12:00:00Z');
const MINUTE = 60_000;

describe('EventCorrelator', () => {
  test('an identical Event is the same record with its count raised, not a new one', () => {
    const correlator = new EventCorrelator();
    const first = correlator.correlate(widget('a'), 'Warning', 'Invalid', 'bad port', T0);
    const again = correlator.correlate(widget('a'), 'Warning', 'Invalid', 'bad port', T0 + 1000);

    expect(again.record).toBe(first.record);
    expect(again.record).toMatchObject({ count: 2, firstTimestamp: T0, lastTimestamp: T0 + 1000 });
  });

  test('Events differing in object uid, type, reason or message are separate records', () => {
    const correlator = new EventCorrelator();
    const base = correlator.correlate(widget('a'), 'Warning', 'Invalid', 'bad port', T0).record;
    const others = [
      correlator.correlate(widget('a', 'uid-recreated'), 'Warning', 'Invalid', 'bad port', T0)
        .record,
      correlator.correlate(widget('a'), 'Normal', 'Invalid', 'bad port', T0).record,
      correlator.correlate(widget('a'), 'Warning', 'Other', 'bad port', T0).record,
      correlator.correlate(widget('a'), 'Warning', 'Invalid', 'bad path', T0).record,
    ];

    expect(new Set([base, ...others]).size).toBe(5);
    expect([base, ...others].map((record) => record.count)).toEqual([1, 1, 1, 1, 1]);
  });

  test('a repeat while the record’s write is still queued needs no write of its own', () => {
    const correlator = new EventCorrelator();
    const first = correlator.correlate(widget('a'), 'Warning', 'Invalid', 'bad port', T0);
    first.record.queued = true;

    expect(correlator.correlate(widget('a'), 'Warning', 'Invalid', 'bad port', T0).action).toBe(
      'queued',
    );
  });

  test('an object gets a burst of 25 writes, then one per 5 minutes; the held-back occurrences still count', () => {
    const correlator = new EventCorrelator();
    const actions = Array.from(
      { length: 30 },
      () => correlator.correlate(widget('a'), 'Warning', 'Invalid', 'bad port', T0).action,
    );

    expect(actions.filter((action) => action === 'write')).toHaveLength(25);
    expect(actions.slice(25)).toEqual(Array(5).fill('rate-limited'));
    expect(
      correlator.correlate(widget('a'), 'Warning', 'Invalid', 'bad port', T0 + 5 * MINUTE - 1)
        .action,
    ).toBe('rate-limited');
    const refilled = correlator.correlate(
      widget('a'),
      'Warning',
      'Invalid',
      'bad port',
      T0 + 10 * MINUTE,
    );
    expect(refilled.action).toBe('write');
    expect(refilled.record.count).toBe(32);
  });

  test('one object over its rate limit leaves other objects’ Events alone', () => {
    const correlator = new EventCorrelator({ rateLimit: { burst: 2 } });
    for (let i = 0; i < 5; i++)
      correlator.correlate(widget('noisy'), 'Warning', `Reason${i}`, 'm', T0);

    expect(correlator.correlate(widget('quiet'), 'Warning', 'Invalid', 'm', T0).action).toBe(
      'write',
    );
  });

  test('from the tenth different message of one object and reason on, they share one combined record', () => {
    const correlator = new EventCorrelator();
    const records = Array.from(
      { length: 12 },
      (_, i) =>
        correlator.correlate(widget('a'), 'Warning', 'Invalid', `problem ${i}`, T0 + i).record,
    );

    expect(new Set(records.slice(0, 9)).size).toBe(9);
    const combined = records[9]!;
    expect(records.slice(9).every((record) => record === combined)).toBe(true);
    expect(combined).toMatchObject({ count: 3, message: `${COMBINED_PREFIX}problem 11` });
  });

  test('the combined group closes after 10 minutes without a similar Event', () => {
    const correlator = new EventCorrelator();
    for (let i = 0; i < 10; i++)
      correlator.correlate(widget('a'), 'Warning', 'Invalid', `problem ${i}`, T0);

    const later = correlator.correlate(
      widget('a'),
      'Warning',
      'Invalid',
      'problem 99',
      T0 + 11 * MINUTE,
    );
    expect(later.record.message).toBe('problem 99');
  });

  test('at most cacheSize Events are remembered: the least recently seen is forgotten and counts from 1 again', () => {
    const correlator = new EventCorrelator({ cacheSize: 2 });
    correlator.correlate(widget('a'), 'Warning', 'Invalid', 'm', T0);
    correlator.correlate(widget('b'), 'Warning', 'Invalid', 'm', T0);
    correlator.correlate(widget('c'), 'Warning', 'Invalid', 'm', T0);

    expect(correlator.correlate(widget('a'), 'Warning', 'Invalid', 'm', T0).record.count).toBe(1);
    expect(correlator.correlate(widget('c'), 'Warning', 'Invalid', 'm', T0).record.count).toBe(2);
  });
});
