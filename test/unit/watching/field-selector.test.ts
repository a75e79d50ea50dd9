import {
  fieldSelectorMatcher,
  parseFieldSelector,
} from '../../../src/framework/watching/field-selector.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

describe('field selector matching in the operator', () => {
  const object: KubeObject & {
    spec: { size: number; paused: boolean };
    status: { phase: string };
  } = {
    metadata: { name: 'main', namespace: 'team-a' },
    spec: { size: 3, paused: false },
    status: { phase: 'Ready' },
  };

  test('metadata.name and metadata.namespace compare with = and ==', () => {
    expect(fieldSelectorMatcher('metadata.name=main')(object)).toBe(true);
    expect(fieldSelectorMatcher('metadata.name==other')(object)).toBe(false);
    expect(fieldSelectorMatcher('metadata.namespace=team-a')(object)).toBe(true);
  });

  test('!= matches any other value', () => {
    expect(fieldSelectorMatcher('status.phase!=Done')(object)).toBe(true);
    expect(fieldSelectorMatcher('status.phase!=Ready')(object)).toBe(false);
  });

  test('any dotted path compares as a string, as on the API server', () => {
    expect(fieldSelectorMatcher('spec.size=3')(object)).toBe(true);
    expect(fieldSelectorMatcher('spec.paused=false')(object)).toBe(true);
  });

  test('a missing field reads as the empty string', () => {
    expect(fieldSelectorMatcher('spec.missing=')(object)).toBe(true);
    expect(fieldSelectorMatcher('spec.missing!=x')(object)).toBe(true);
    expect(
      fieldSelectorMatcher('metadata.namespace=')({ metadata: { name: 'cluster-wide' } }),
    ).toBe(true);
  });

  test('every comma-separated requirement must hold', () => {
    expect(fieldSelectorMatcher('metadata.name=main,status.phase=Ready')(object)).toBe(true);
    expect(fieldSelectorMatcher('metadata.name=main,status.phase=Done')(object)).toBe(false);
  });

  test('an unreadable selector is an error naming the selector and the part', () => {
    expect(() => parseFieldSelector('metadata.name')).toThrow(
      /invalid field selector 'metadata.name': cannot read 'metadata.name'/,
    );
  });
});
