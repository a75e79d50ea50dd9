import type { MemberLease } from '../../../src/framework/sharding/ring-membership.js';
import { memberFor } from '../../../src/framework/sharding/ring.js';
import { heirsOf, nextHeirs, successionsOf } from '../../../src/framework/sharding/succession.js';

const PREFIX = 'konductor-shard-';
const HEIRS = 'konductor.dev/heirs';

function lease(member: string, heirs?: string, resourceVersion = '1'): MemberLease {
  return {
    metadata: {
      name: `${PREFIX}${member}`,
      resourceVersion,
      ...(heirs === undefined ? {} : { annotations: { [HEIRS]: heirs } }),
    },
    spec: { holderIdentity: member },
  };
}

describe('the heirs of members that left the ring', () => {
  it('names the live members the heirs of a member that just left', () => {
    expect(nextHeirs(undefined, ['b', 'a'])).toEqual(['a', 'b']);
  });

  it('drops a dead heir and never adds one, so surviving heirs keep what they took', () => {
    expect(nextHeirs(['a', 'b'], ['a', 'c'])).toEqual(['a']);
    expect(nextHeirs(['a', 'b'], ['a', 'b', 'c'])).toBeUndefined();
  });

  it('keeps a pending heir: a coordinator that just started sees every member pending', () => {
    expect(nextHeirs(['a', 'b'], ['a'], ['b'])).toBeUndefined();
  });

  it('names the live members again when every heir died', () => {
    expect(nextHeirs(['a'], ['c', 'd'])).toEqual(['c', 'd']);
  });

  it('names nobody while no member is live', () => {
    expect(nextHeirs(undefined, [])).toBeUndefined();
  });

  it('moves only a dead heir’s objects when heirs are dropped', () => {
    const keys = Array.from({ length: 1_000 }, (_, i) => `w-${i}`);
    for (const key of keys) {
      const before = memberFor(key, ['a', 'b', 'c']);
      if (before !== 'b') expect(memberFor(key, ['a', 'c'])).toBe(before);
    }
  });

  it('reads heirs from a Lease, ignoring names that are no member names', () => {
    expect(heirsOf(lease('x', 'b,a,Bad_Name,,a'), HEIRS)).toEqual(['a', 'b']);
    expect(heirsOf(lease('x', ','), HEIRS)).toBeUndefined();
    expect(heirsOf(lease('x'), HEIRS)).toBeUndefined();
  });

  it('tells departed members (no heirs yet) from successions and from members present', () => {
    const ring = successionsOf(
      [lease('a'), lease('b'), lease('gone', undefined, '7'), lease('old', 'a', '9')],
      PREFIX,
      HEIRS,
      { live: ['a'], pending: ['b'] },
    );
    expect(ring.departed).toEqual([{ member: 'gone', resourceVersion: '7' }]);
    expect([...ring.successions]).toEqual([['old', { heirs: ['a'], resourceVersion: '9' }]]);
  });
});
