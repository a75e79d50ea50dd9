import { isPlainObject } from '../../../src/framework/objects/plain-object.js';

describe('isPlainObject', () => {
  it('holds for an object with fields, and an empty one', () => {
    expect(isPlainObject({ a: 1 })).toBe(true);
    expect(isPlainObject({})).toBe(true);
  });

  it('does not hold for null, arrays, strings or numbers', () => {
    expect([null, [], ['a'], 'a', 1, undefined].some(isPlainObject)).toBe(false);
  });
});
