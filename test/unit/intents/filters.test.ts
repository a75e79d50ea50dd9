import {
  ABSENT,
  matchesMeta,
  matchesObject,
  matchesValue,
  PRESENT,
} from '../../../src/framework/intents/filters.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

const LABELS = { app: 'demo', tier: 'gold', empty: '' };

describe('matchesMeta', () => {
  test('matches anything without filters', () => {
    expect(matchesMeta(LABELS, undefined)).toBe(true);
    expect(matchesMeta(undefined, undefined)).toBe(true);
    expect(matchesMeta(LABELS, {})).toBe(true);
  });

  test('matches an exact value', () => {
    expect(matchesMeta(LABELS, { app: 'demo' })).toBe(true);
    expect(matchesMeta(LABELS, { app: 'other' })).toBe(false);
  });

  test('an exact value does not match a missing key', () => {
    expect(matchesMeta(LABELS, { missing: 'demo' })).toBe(false);
    expect(matchesMeta(undefined, { app: 'demo' })).toBe(false);
  });

  test('an exact empty value matches only an empty value', () => {
    expect(matchesMeta(LABELS, { empty: '' })).toBe(true);
    expect(matchesMeta(LABELS, { app: '' })).toBe(false);
    expect(matchesMeta(LABELS, { missing: '' })).toBe(false);
  });

  test('PRESENT matches a key with any value', () => {
    expect(matchesMeta(LABELS, { app: PRESENT })).toBe(true);
  });

  test('PRESENT counts an empty string as present', () => {
    expect(matchesMeta(LABELS, { empty: PRESENT })).toBe(true);
  });

  test('PRESENT does not match a missing key', () => {
    expect(matchesMeta(LABELS, { missing: PRESENT })).toBe(false);
    expect(matchesMeta(undefined, { app: PRESENT })).toBe(false);
  });

  test('ABSENT matches a missing key', () => {
    expect(matchesMeta(LABELS, { missing: ABSENT })).toBe(true);
    expect(matchesMeta(undefined, { app: ABSENT })).toBe(true);
  });

  test('ABSENT does not match a key with an empty value', () => {
    expect(matchesMeta(LABELS, { empty: ABSENT })).toBe(false);
  });

  test('a predicate gets the value, or undefined when missing', () => {
    const seen: (string | undefined)[] = [];
    const predicate = (value: string | undefined): boolean => {
      seen.push(value);
      return value?.startsWith('go') ?? false;
    };

    expect(matchesMeta(LABELS, { tier: predicate })).toBe(true);
    expect(matchesMeta(LABELS, { missing: predicate })).toBe(false);
    expect(seen).toEqual(['gold', undefined]);
  });

  test('all filters must match', () => {
    expect(matchesMeta(LABELS, { app: 'demo', tier: PRESENT, missing: ABSENT })).toBe(true);
    expect(matchesMeta(LABELS, { app: 'demo', tier: ABSENT })).toBe(false);
  });
});

describe('matchesValue', () => {
  test('matches anything without a filter', () => {
    expect(matchesValue(undefined, undefined)).toBe(true);
    expect(matchesValue({ a: 1 }, undefined)).toBe(true);
  });

  test('matches a literal by value', () => {
    expect(matchesValue('Ready', 'Ready')).toBe(true);
    expect(matchesValue(3, 3)).toBe(true);
    expect(matchesValue(false, false)).toBe(true);
    expect(matchesValue(null, null)).toBe(true);
  });

  test('a literal does not match another type or a missing value', () => {
    expect(matchesValue('3', 3)).toBe(false);
    expect(matchesValue(0, false)).toBe(false);
    expect(matchesValue(undefined, null)).toBe(false);
    expect(matchesValue(undefined, 'Ready')).toBe(false);
  });

  test('PRESENT matches any defined value, null and falsy ones included', () => {
    for (const value of [null, 0, false, '', {}, []])
      expect(matchesValue(value, PRESENT)).toBe(true);
    expect(matchesValue(undefined, PRESENT)).toBe(false);
  });

  test('ABSENT matches only a missing value', () => {
    expect(matchesValue(undefined, ABSENT)).toBe(true);
    expect(matchesValue(null, ABSENT)).toBe(false);
    expect(matchesValue('', ABSENT)).toBe(false);
  });

  test('a predicate decides', () => {
    const large = (value: unknown): boolean => typeof value === 'number' && value > 3;
    expect(matchesValue(5, large)).toBe(true);
    expect(matchesValue(2, large)).toBe(false);
    expect(matchesValue(undefined, large)).toBe(false);
  });
});

describe('matchesObject', () => {
  const object: KubeObject = {
    metadata: { name: 'demo', labels: { app: 'demo' }, annotations: { 'example.com/paused': '' } },
    spec: { size: 3, tls: { enabled: true } },
    status: { phase: 'Running' },
  };

  test('matches anything without filters', () => {
    expect(matchesObject(object, {})).toBe(true);
    expect(matchesObject({}, {})).toBe(true);
  });

  test('checks labels', () => {
    expect(matchesObject(object, { labels: { app: 'demo' } })).toBe(true);
    expect(matchesObject(object, { labels: { app: 'other' } })).toBe(false);
  });

  test('checks annotations', () => {
    expect(matchesObject(object, { annotations: { 'example.com/paused': PRESENT } })).toBe(true);
    expect(matchesObject(object, { annotations: { 'example.com/paused': ABSENT } })).toBe(false);
  });

  test('does not mix up labels and annotations', () => {
    expect(matchesObject(object, { labels: { 'example.com/paused': PRESENT } })).toBe(false);
    expect(matchesObject(object, { annotations: { app: PRESENT } })).toBe(false);
  });

  test('checks a field against a value', () => {
    expect(matchesObject(object, { field: 'spec.size', value: 3 })).toBe(true);
    expect(matchesObject(object, { field: 'spec.size', value: 5 })).toBe(false);
  });

  test('checks a nested field for presence or absence', () => {
    expect(matchesObject(object, { field: 'spec.tls.enabled', value: PRESENT })).toBe(true);
    expect(matchesObject(object, { field: 'spec.tls.port', value: ABSENT })).toBe(true);
    expect(matchesObject(object, { field: 'spec.missing.deep', value: PRESENT })).toBe(false);
  });

  test('checks a field with a predicate', () => {
    expect(
      matchesObject(object, { field: 'status.phase', value: (phase) => phase === 'Running' }),
    ).toBe(true);
  });

  test('does not filter by a field given without a value', () => {
    expect(matchesObject(object, { field: 'spec.missing' })).toBe(true);
  });

  test('asks when() with the object in its filter context', () => {
    const seen: KubeObject[] = [];
    expect(
      matchesObject(object, {
        when: (candidate) => {
          seen.push(candidate.body);
          return (
            candidate.spec === object.spec &&
            candidate.metadata === object.metadata &&
            candidate.name === object.metadata?.name
          );
        },
      }),
    ).toBe(true);
    expect(seen).toEqual([object]);
    expect(matchesObject(object, { when: () => false })).toBe(false);
  });

  test('does not ask when() once another filter failed', () => {
    let asked = false;
    const when = (): boolean => {
      asked = true;
      return true;
    };

    expect(matchesObject(object, { labels: { app: 'other' }, when })).toBe(false);
    expect(asked).toBe(false);
  });

  test('requires every filter to match', () => {
    const all = {
      labels: { app: 'demo' },
      annotations: { 'example.com/paused': PRESENT },
      field: 'spec.size',
      value: 3,
    } as const;
    expect(matchesObject(object, { ...all, when: () => true })).toBe(true);
    expect(matchesObject(object, { ...all, value: 4 })).toBe(false);
    expect(matchesObject(object, { ...all, when: () => false })).toBe(false);
  });
});
