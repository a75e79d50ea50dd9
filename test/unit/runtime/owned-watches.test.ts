import { childWatchScopes } from '../../../src/framework/runtime/owned-watches.js';

const namespaced = { namespaced: true };

describe('where an owned handler watches its children (childWatchScopes)', () => {
  test('in the owner route’s namespace: owner references never cross namespaces', () => {
    expect(childWatchScopes(namespaced, 'team-a', ['team-a', 'team-b'], 'app=db')).toEqual([
      { scope: { namespace: 'team-a', labelSelector: 'app=db' } },
    ]);
  });

  test('for a cluster-wide owner route, in each of the operator’s namespaces', () => {
    expect(childWatchScopes(namespaced, undefined, ['team-a', 'team-b'])).toEqual([
      { scope: { namespace: 'team-a' } },
      { scope: { namespace: 'team-b' } },
    ]);
  });

  test('with a namespace glob, cluster-wide and kept to the globs per event', () => {
    expect(childWatchScopes(namespaced, undefined, ['team-*'])).toEqual([
      { scope: {}, globs: ['team-*'] },
    ]);
  });

  test('across the cluster when the operator has no namespaces, or the child is cluster-scoped', () => {
    expect(childWatchScopes(namespaced, undefined, [])).toEqual([{ scope: {} }]);
    expect(childWatchScopes({ namespaced: false }, undefined, ['team-a'])).toEqual([{ scope: {} }]);
  });
});
