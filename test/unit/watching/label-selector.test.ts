import {
  labelSelectorMatcher,
  parseLabelSelector,
} from '../../../src/framework/watching/label-selector.js';

describe('label selector matching in the operator', () => {
  const labels = { app: 'db', tier: 'backend', env: 'prod' };

  test('k=v and k==v match an equal value only', () => {
    expect(labelSelectorMatcher('app=db')(labels)).toBe(true);
    expect(labelSelectorMatcher('app==db')(labels)).toBe(true);
    expect(labelSelectorMatcher('app=web')(labels)).toBe(false);
    expect(labelSelectorMatcher('missing=db')(labels)).toBe(false);
  });

  test('k!=v matches a different value and a missing label', () => {
    expect(labelSelectorMatcher('app!=web')(labels)).toBe(true);
    expect(labelSelectorMatcher('app!=db')(labels)).toBe(false);
    expect(labelSelectorMatcher('missing!=db')(labels)).toBe(true);
  });

  test('k in (a,b) needs the label with one of the values', () => {
    expect(labelSelectorMatcher('env in (staging, prod)')(labels)).toBe(true);
    expect(labelSelectorMatcher('env in (staging,dev)')(labels)).toBe(false);
    expect(labelSelectorMatcher('missing in (prod)')(labels)).toBe(false);
  });

  test('k notin (a,b) matches other values and a missing label', () => {
    expect(labelSelectorMatcher('env notin (staging,dev)')(labels)).toBe(true);
    expect(labelSelectorMatcher('env notin (prod)')(labels)).toBe(false);
    expect(labelSelectorMatcher('missing notin (prod)')(labels)).toBe(true);
  });

  test('k and !k test presence, whatever the value', () => {
    expect(labelSelectorMatcher('tier')(labels)).toBe(true);
    expect(labelSelectorMatcher('missing')(labels)).toBe(false);
    expect(labelSelectorMatcher('!missing')(labels)).toBe(true);
    expect(labelSelectorMatcher('!tier')(labels)).toBe(false);
    expect(labelSelectorMatcher('!tier')(undefined)).toBe(true);
  });

  test('every comma-separated requirement must hold, commas inside a set included', () => {
    expect(labelSelectorMatcher('app=db, env in (prod,dev),!canary')(labels)).toBe(true);
    expect(labelSelectorMatcher('app=db,env in (staging,dev)')(labels)).toBe(false);
    expect(parseLabelSelector('app=db,env in (a,b),tier')).toHaveLength(3);
  });

  test('an empty selector matches everything, an object without labels included', () => {
    expect(labelSelectorMatcher('')(labels)).toBe(true);
    expect(labelSelectorMatcher(' ')(undefined)).toBe(true);
  });

  test('keys with a prefix and values with dots, dashes and underscores are read whole', () => {
    const matcher = labelSelectorMatcher('app.kubernetes.io/name=my-app_v1.2');
    expect(matcher({ 'app.kubernetes.io/name': 'my-app_v1.2' })).toBe(true);
    expect(matcher({ 'app.kubernetes.io/name': 'my-app' })).toBe(false);
  });

  test('an unreadable selector is an error naming the selector and the part', () => {
    expect(() => parseLabelSelector('app=db,tier>3')).toThrow(
      /invalid label selector 'app=db,tier>3': cannot read 'tier>3'/,
    );
    expect(() => parseLabelSelector('env in prod')).toThrow(/cannot read 'env in prod'/);
  });
});
