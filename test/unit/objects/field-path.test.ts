import { getField, parseFieldPath, setField } from '../../../src/framework/objects/field-path.js';

describe('field paths', () => {
  test('parseFieldPath splits a dotted path and drops empty parts', () => {
    expect(parseFieldPath('spec.size')).toEqual(['spec', 'size']);
    expect(parseFieldPath('.spec..size.')).toEqual(['spec', 'size']);
    expect(parseFieldPath('')).toEqual([]);
  });

  test('parseFieldPath passes a list of keys through, dots and all', () => {
    expect(parseFieldPath(['metadata', 'labels', 'app.kubernetes.io/name'])).toEqual([
      'metadata',
      'labels',
      'app.kubernetes.io/name',
    ]);
  });

  test('getField reads nested values', () => {
    expect(getField({ spec: { tls: { port: 443 } } }, ['spec', 'tls', 'port'])).toBe(443);
  });

  test('getField is undefined when a step is missing or not an object', () => {
    expect(getField({ spec: {} }, ['spec', 'tls', 'port'])).toBeUndefined();
    expect(getField({ spec: null }, ['spec', 'tls'])).toBeUndefined();
    expect(getField({ spec: 'flat' }, ['spec', 'tls'])).toBeUndefined();
  });

  test('getField with an empty path is the value itself', () => {
    const value = { a: 1 };
    expect(getField(value, [])).toBe(value);
  });

  test('setField creates objects on the way', () => {
    const target: Record<string, unknown> = {};
    setField(target, ['status', 'conditions', 'ready'], true);
    expect(target).toEqual({ status: { conditions: { ready: true } } });
  });

  test('setField keeps siblings and replaces non-objects on the way', () => {
    const target: Record<string, unknown> = {
      status: { phase: 'Ready', detail: 'flat', list: [1] },
    };
    setField(target, ['status', 'detail', 'x'], 1);
    setField(target, ['status', 'list', 'y'], 2);
    expect(target).toEqual({ status: { phase: 'Ready', detail: { x: 1 }, list: { y: 2 } } });
  });
});
