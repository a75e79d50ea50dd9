import { clearCondition, setCondition } from '../../../src/handlers/etcd/conditions.js';
import type { Condition } from '../../../src/handlers/etcd/types.js';

const T1 = new Date('2024-05-01T10:00:00.123Z');
const T2 = new Date('2024-05-01T10:05:00.456Z');
const T3 = new Date('2024-05-01T10:09:00.789Z');
/** How the conditions stamp times: RFC 3339 without fractions. */
const stamp = (date: Date): string => date.toISOString().replace(/\.\d{3}Z$/, 'Z');

const available: Condition = {
  type: 'Available',
  status: 'True',
  reason: 'Cluster available',
  message: '3 healthy members',
  lastUpdateTime: stamp(T1),
  lastTransitionTime: stamp(T1),
};
const scaling: Condition = {
  type: 'Scaling',
  status: 'True',
  reason: 'Scaling up',
  message: 'Current cluster size: 1, desired cluster size: 3',
  lastUpdateTime: stamp(T1),
  lastTransitionTime: stamp(T1),
};

describe('setCondition', () => {
  it('adds a missing condition with both times set to now, in whole seconds', () => {
    expect(
      setCondition(
        undefined,
        {
          type: 'Upgrading',
          status: 'True',
          reason: 'Cluster upgrading',
          message: 'upgrading to 3.4.24',
        },
        T2,
      ),
    ).toEqual([
      {
        type: 'Upgrading',
        status: 'True',
        reason: 'Cluster upgrading',
        message: 'upgrading to 3.4.24',
        lastUpdateTime: '2024-05-01T10:05:00Z',
        lastTransitionTime: '2024-05-01T10:05:00Z',
      },
    ]);
  });

  it('appends a new type after the existing conditions', () => {
    const next = setCondition(
      [available],
      { type: 'Scaling', status: 'True', reason: 'Scaling up', message: 'm' },
      T2,
    );
    expect(next.map((c) => c.type)).toEqual(['Available', 'Scaling']);
    expect(next[0]).toBe(available);
  });

  it('is a no-op when status, reason and message are unchanged: both times are kept', () => {
    const next = setCondition(
      [available, scaling],
      {
        type: 'Available',
        status: 'True',
        reason: 'Cluster available',
        message: '3 healthy members',
      },
      T3,
    );
    expect(next).toEqual([available, scaling]);
    expect(next[0]!.lastUpdateTime).toBe(stamp(T1));
    expect(next[0]!.lastTransitionTime).toBe(stamp(T1));
  });

  it('moves lastUpdateTime but not lastTransitionTime when only the reason or message changes', () => {
    const next = setCondition(
      [available],
      {
        type: 'Available',
        status: 'True',
        reason: 'Cluster available',
        message: '5 healthy members',
      },
      T2,
    );
    expect(next[0]).toMatchObject({
      status: 'True',
      message: '5 healthy members',
      lastUpdateTime: stamp(T2),
      lastTransitionTime: stamp(T1),
    });
  });

  it('moves lastTransitionTime when the status changes', () => {
    const next = setCondition(
      [available],
      { type: 'Available', status: 'False', reason: 'LostQuorum', message: 'lost quorum' },
      T2,
    );
    expect(next[0]).toMatchObject({
      status: 'False',
      reason: 'LostQuorum',
      lastUpdateTime: stamp(T2),
      lastTransitionTime: stamp(T2),
    });
  });

  it('replaces the condition in place and leaves the others alone', () => {
    const next = setCondition(
      [scaling, available],
      { type: 'Scaling', status: 'False', reason: 'Scaling up', message: 'done' },
      T2,
    );
    expect(next.map((c) => c.type)).toEqual(['Scaling', 'Available']);
    expect(next[1]).toBe(available);
  });

  it('never changes the list it was given', () => {
    const before = [available];
    const copy = structuredClone(before);
    setCondition(before, { type: 'Available', status: 'False', reason: 'r', message: 'm' }, T2);
    setCondition(before, { type: 'Scaling', status: 'True', reason: 'r', message: 'm' }, T2);
    expect(before).toEqual(copy);
  });
});

describe('clearCondition', () => {
  it('turns a True condition False, keeping its reason and message and moving both times', () => {
    expect(clearCondition([scaling], 'Scaling', T2)).toEqual([
      { ...scaling, status: 'False', lastUpdateTime: stamp(T2), lastTransitionTime: stamp(T2) },
    ]);
  });

  it('is a no-op on a condition that is already False: its times are kept', () => {
    const cleared: Condition = { ...scaling, status: 'False' };
    expect(clearCondition([cleared, available], 'Scaling', T3)).toEqual([cleared, available]);
  });

  it('does not invent a condition that was never set', () => {
    expect(clearCondition([available], 'Upgrading', T2)).toEqual([available]);
    expect(clearCondition(undefined, 'Upgrading', T2)).toEqual([]);
  });

  it('moves lastTransitionTime again when a cleared condition is set True later', () => {
    const cleared = clearCondition([scaling], 'Scaling', T2);
    const again = setCondition(
      cleared,
      { type: 'Scaling', status: 'True', reason: 'Scaling down', message: 'm' },
      T3,
    );
    expect(again[0]).toMatchObject({ status: 'True', lastTransitionTime: stamp(T3) });
  });
});
