import {
  conditionChange,
  conditionsOf,
  nextConditions,
  readConditions,
  type Condition,
} from '../../../src/framework/intents/conditions.js';

const earlier = new Date('2026-11-29T10:00:00Z');
const now = new Date('2026-11-29T12:00:00.123Z');
const ready: Condition = {
  type: 'Ready',
  status: 'True',
  observedGeneration: 1,
  lastTransitionTime: '2026-11-29T10:00:00Z',
  reason: 'Ready',
  message: '',
};

describe('conditions (metav1.Condition)', () => {
  test('a new condition is added with the time of the change, in whole seconds, and the generation', () => {
    expect(nextConditions([], [conditionChange('Ready', true)], 3, now)).toEqual([
      {
        type: 'Ready',
        status: 'True',
        observedGeneration: 3,
        lastTransitionTime: '2026-11-29T12:00:00Z',
        reason: 'Ready',
        message: '',
      },
    ]);
  });

  test('lastTransitionTime moves only when the status changes', () => {
    const sameStatus = nextConditions(
      [ready],
      [conditionChange('Ready', true, { message: 'still fine' })],
      2,
      now,
    );
    const flipped = nextConditions([ready], [conditionChange('Ready', false)], 2, now);

    expect(sameStatus?.[0]).toMatchObject({
      lastTransitionTime: ready.lastTransitionTime,
      message: 'still fine',
      observedGeneration: 2,
    });
    expect(flipped?.[0]).toMatchObject({
      status: 'False',
      reason: 'NotReady',
      lastTransitionTime: '2026-11-29T12:00:00Z',
    });
  });

  test('setting a condition as it is changes nothing, so nothing is written', () => {
    expect(
      nextConditions([ready], [conditionChange('Ready', 'True', { reason: 'Ready' })], 1, now),
    ).toBeUndefined();
    expect(nextConditions([ready], [], 1, now)).toBeUndefined();
  });

  test('other conditions keep their place; a new type goes last', () => {
    const synced: Condition = { ...ready, type: 'Synced', reason: 'Synced' };

    expect(
      nextConditions(
        [synced, ready],
        [conditionChange('Degraded', false), conditionChange('Ready', false)],
        1,
        earlier,
      )?.map((c) => `${c.type}=${c.status}`),
    ).toEqual(['Synced=True', 'Ready=False', 'Degraded=False']);
  });

  test('a type or reason the API server would refuse is an error naming it', () => {
    expect(() => conditionChange('not a type!', true)).toThrow(
      'conditions.set: type "not a type!" is not a condition type (such as \'Ready\')',
    );
    expect(() => conditionChange('Ready', true, { reason: 'has spaces' })).toThrow(
      'conditions.set(\'Ready\'): reason "has spaces" must be CamelCase',
    );
    expect(() => conditionChange('Ready', 'yes' as never)).toThrow(
      "status must be true, false, 'True', 'False' or 'Unknown'",
    );
  });

  test('malformed conditions in the status (it is attacker-controlled) are dropped, not trusted', () => {
    expect(readConditions({ conditions: [ready, null, 'x', { status: 'True' }] })).toEqual([ready]);
    expect(readConditions({ conditions: 'Ready' })).toEqual([]);
  });

  test('ctx.conditions reads what the run set over what the object has', () => {
    const { conditions, changes } = conditionsOf({ conditions: [ready] });

    conditions.set('Ready', false, { reason: 'Waiting', message: 'PVC pending' });

    expect(conditions.isTrue('Ready')).toBe(false);
    expect(conditions.get('Ready')).toMatchObject({
      status: 'False',
      reason: 'Waiting',
      message: 'PVC pending',
    });
    expect(changes).toHaveLength(1);
  });
});
