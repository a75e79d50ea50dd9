import {
  annotationName,
  DIFF_BASE_KEY,
  FINALIZER,
  isFrameworkKey,
  PREFIX,
  progressKey,
} from '../../../src/framework/state/keys.js';

/** A valid Kubernetes annotation name (the part after the prefix). */
const VALID_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

const ODD_IDS = [
  '',
  '/',
  '...',
  '.hidden',
  '..leading.dots',
  'trailing.dots..',
  '-dash-',
  '_under_',
  'with spaces in it',
  'tab\there',
  'new\nline',
  'Ünïcödé.häñdler',
  '日本語',
  'emoji 🚀 handler',
  'Class.method/spec.size',
  'Class.method/metadata.labels.tier',
  'a/b/c/d',
  'x:y@z#w',
  'ends/with/slash/',
  '/starts/with/slash',
  'a'.repeat(63),
  'a'.repeat(64),
  'b'.repeat(200),
  `${'c.'.repeat(40)}end`,
  `${'d'.repeat(53)}..........tail`,
  `${'é'.repeat(100)}`,
];

describe('constants', () => {
  test('every framework key lives under konductor.dev/', () => {
    expect(PREFIX).toBe('konductor.dev');
    expect(DIFF_BASE_KEY).toBe('konductor.dev/last-handled-configuration');
    expect(FINALIZER).toBe('konductor.dev/finalizer');
  });
});

describe('annotationName', () => {
  test('keeps a plain Class.method id as is', () => {
    expect(annotationName('Cluster.reconcile')).toBe('Cluster.reconcile');
  });

  test('keeps ids made of letters, digits, dots, dashes and underscores as is', () => {
    expect(annotationName('my_handler-2.v1')).toBe('my_handler-2.v1');
  });

  test('turns the slash of a field handler id into a dot, readably', () => {
    expect(annotationName('Class.method/spec.size')).toBe('Class.method.spec.size');
  });

  test('keeps an id of exactly 63 valid characters as is', () => {
    const id = 'a'.repeat(63);
    expect(annotationName(id)).toBe(id);
  });

  test('gives every odd id a valid annotation name', () => {
    for (const id of ODD_IDS) {
      expect({ id, name: annotationName(id) }).toEqual({
        id,
        name: expect.stringMatching(VALID_NAME),
      });
    }
  });

  test('never exceeds 63 characters', () => {
    for (const id of ODD_IDS) expect(annotationName(id).length).toBeLessThanOrEqual(63);
  });

  test('cuts a long id and suffixes a short hash', () => {
    const name = annotationName('x'.repeat(200));
    expect(name).toMatch(/^x+-[0-9a-f]{8}$/);
    expect(name.length).toBeLessThanOrEqual(63);
  });

  test('adds a hash when characters other than slashes had to be rewritten', () => {
    expect(annotationName('with spaces')).toMatch(/^with\.spaces-[0-9a-f]{8}$/);
  });

  test('adds a hash when leading or trailing characters had to be dropped', () => {
    expect(annotationName('.hidden')).toMatch(/^hidden-[0-9a-f]{8}$/);
    expect(annotationName('trailing/')).toMatch(/^trailing-[0-9a-f]{8}$/);
  });

  test('is only a hash when nothing valid is left', () => {
    expect(annotationName('日本語')).toMatch(/^[0-9a-f]{8}$/);
    expect(annotationName('')).toMatch(/^[0-9a-f]{8}$/);
  });

  test('is deterministic', () => {
    expect(annotationName('b'.repeat(200))).toBe(annotationName('b'.repeat(200)));
    expect(annotationName('with spaces')).toBe(annotationName('with spaces'));
  });

  test('keeps long ids that differ only after the cut apart', () => {
    const stem = `Operator.handler/${'spec.'.repeat(20)}`;
    const ids = ['a', 'b', 'c', 'aa', 'ab'].map((tail) => `${stem}${tail}`);
    expect(new Set(ids.map(annotationName)).size).toBe(ids.length);
  });

  test('keeps long ids that differ only in their first character apart', () => {
    expect(annotationName(`a${'z'.repeat(100)}`)).not.toBe(annotationName(`b${'z'.repeat(100)}`));
  });

  test('keeps ids that clean up to the same text apart', () => {
    const ids = ['a b', 'a:b', 'a@b', 'a\tb', 'a b ', ' a b'];
    expect(new Set(ids.map(annotationName)).size).toBe(ids.length);
  });

  test('keeps a rewritten id apart from the valid id it resembles', () => {
    expect(annotationName('a b')).not.toBe(annotationName('a.b'));
    expect(annotationName('.hidden')).not.toBe(annotationName('hidden'));
  });
});

describe('progressKey', () => {
  test('is the annotation name under the framework prefix', () => {
    expect(progressKey('Cluster.reconcile')).toBe('konductor.dev/Cluster.reconcile');
    expect(progressKey('Class.method/spec.size')).toBe('konductor.dev/Class.method.spec.size');
  });

  test('is always a framework key', () => {
    for (const id of ODD_IDS) expect(isFrameworkKey(progressKey(id))).toBe(true);
  });
});

describe('isFrameworkKey', () => {
  test('is true for keys under konductor.dev/', () => {
    expect(isFrameworkKey(DIFF_BASE_KEY)).toBe(true);
    expect(isFrameworkKey('konductor.dev/anything')).toBe(true);
  });

  test('is false for other keys, including look-alike prefixes', () => {
    expect(isFrameworkKey('app.kubernetes.io/name')).toBe(false);
    expect(isFrameworkKey('konductor.dev')).toBe(false);
    expect(isFrameworkKey('konductor.dev.example.com/x')).toBe(false);
    expect(isFrameworkKey('sub.konductor.dev/x')).toBe(false);
  });
});
