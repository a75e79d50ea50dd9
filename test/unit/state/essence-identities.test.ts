import { essenceOf, inspectDiffBase } from '../../../src/framework/state/essence.js';
import { Identity, isBookkeepingKey } from '../../../src/framework/state/identity.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

const ALPHA = Identity.parse('alpha.example.com');
const BETA = Identity.parse('beta.example.com');

function annotated(annotations: Record<string, string>): KubeObject {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', uid: 'u', annotations },
    spec: { size: 1 },
  };
}

const annotationsOf = (object: KubeObject, identity: Identity): unknown =>
  (essenceOf(object, [], identity).metadata as { annotations?: unknown } | undefined)?.annotations;

describe('the essence as an identity sees it', () => {
  test("leaves out the identity's own bookkeeping and marker", () => {
    const object = annotated({
      [ALPHA.diffBaseKey]: '{}',
      [ALPHA.progressKey('h')]: '{}',
      [ALPHA.timerKey('t')]: '{}',
      [ALPHA.managedMarker!]: 'yes',
      'team.example.com/owner': 'ops',
    });
    expect(annotationsOf(object, ALPHA)).toEqual({ 'team.example.com/owner': 'ops' });
  });

  test("leaves out another operator's bookkeeping when its prefix carries the marker", () => {
    const object = annotated({
      [BETA.diffBaseKey]: '{}',
      [BETA.progressKey('h')]: '{}',
      [BETA.managedMarker!]: 'yes',
      'team.example.com/owner': 'ops',
    });
    expect([annotationsOf(object, ALPHA), annotationsOf(object, Identity.DEFAULT)]).toEqual([
      { 'team.example.com/owner': 'ops' },
      { 'team.example.com/owner': 'ops' },
    ]);
  });

  test("leaves out the default identity's bookkeeping, which carries no marker", () => {
    const object = annotated({
      [Identity.DEFAULT.diffBaseKey]: '{}',
      [Identity.DEFAULT.progressKey('h')]: '{}',
      'team.example.com/owner': 'ops',
    });
    expect(annotationsOf(object, ALPHA)).toEqual({ 'team.example.com/owner': 'ops' });
  });

  test('keeps annotations of an unmarked prefix: they are the user’s, and their changes count', () => {
    const object = annotated({
      'beta.example.com/last-handled-configuration': '{}',
      'sub.konductor.dev/x': '1',
    });
    expect(annotationsOf(object, ALPHA)).toEqual({
      'beta.example.com/last-handled-configuration': '{}',
      'sub.konductor.dev/x': '1',
    });
  });

  test("does not change when another operator's marked bookkeeping changes", () => {
    const before = annotated({
      [BETA.managedMarker!]: 'yes',
      [BETA.progressKey('h')]: '{"retries":1}',
    });
    const after = annotated({
      [BETA.managedMarker!]: 'yes',
      [BETA.progressKey('h')]: '{"retries":2}',
      [BETA.diffBaseKey]: '{"spec":{}}',
    });
    expect(essenceOf(after, [], ALPHA)).toEqual(essenceOf(before, [], ALPHA));
  });

  test('reads the diff-base of its own identity only', () => {
    const object = annotated({
      [ALPHA.diffBaseKey]: '{"spec":{"size":1}}',
      [BETA.diffBaseKey]: '{"spec":{"size":9}}',
    });
    expect([inspectDiffBase(object, ALPHA).essence, inspectDiffBase(object, BETA).essence]).toEqual(
      [{ spec: { size: 1 } }, { spec: { size: 9 } }],
    );
  });
});

describe('isBookkeepingKey', () => {
  test('is false for keys without a prefix, and for a marker lookup through the prototype', () => {
    expect(isBookkeepingKey('plain', {}, ALPHA)).toBe(false);
    expect(isBookkeepingKey('__proto__/x', {}, ALPHA)).toBe(false);
    expect(isBookkeepingKey('toString/x', {}, ALPHA)).toBe(false);
  });
});
