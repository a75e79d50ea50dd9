import { sameJson } from '../../../src/handlers/common/same-json.js';

describe('comparing a status read back from the API server with a new one', () => {
  test('the same fields in another key order are the same', () => {
    const built = {
      paused: false,
      replicas: 1,
      conditions: [{ type: 'Reconciled', status: 'True', lastTransitionTime: 't' }],
    };
    const readBack = {
      conditions: [{ lastTransitionTime: 't', status: 'True', type: 'Reconciled' }],
      paused: false,
      replicas: 1,
    };
    expect(sameJson(built, readBack)).toBe(true);
  });

  test('a key holding undefined is the same as an absent key, as it is when sent', () => {
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
  });

  test('a changed value or a different list order is a change', () => {
    expect(sameJson({ replicas: 1 }, { replicas: 2 })).toBe(false);
    expect(sameJson({ members: ['a', 'b'] }, { members: ['b', 'a'] })).toBe(false);
  });
});
