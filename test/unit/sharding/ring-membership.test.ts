import {
  ringPrefixOf,
  quietMembers,
  quietToWatch,
  ringView,
  sightMembers,
  type MemberLease,
} from '../../../src/framework/sharding/ring-membership.js';

const PREFIX = 'konductor-shard-';

function lease(member: string, holder: string, renewTime: string): MemberLease {
  return { metadata: { name: `${PREFIX}${member}` }, spec: { holderIdentity: holder, renewTime } };
}

describe('the ring’s members as a replica sees them', () => {
  it('names member Leases after the leader Lease', () => {
    expect(ringPrefixOf('konductor-leader')).toBe('konductor-shard-');
    expect(ringPrefixOf('db-operator.example.com-leader')).toBe('db-operator.example.com-shard-');
    expect(ringPrefixOf('my-lock')).toBe('my-lock-shard-');
  });

  it('keeps a member Lease name within 253 characters with a 63-character member', () => {
    const prefix = ringPrefixOf(`${'a'.repeat(240)}-leader`);
    expect(prefix.length + 63).toBeLessThanOrEqual(253);
  });

  it('counts a member live until a lease duration after its Lease last changed', () => {
    let sightings = sightMembers(new Map(), [lease('a', 'a', 't1')], PREFIX, 0);
    sightings = sightMembers(sightings, [lease('a', 'a', 't2')], PREFIX, 1_000);
    sightings = sightMembers(sightings, [lease('a', 'a', 't2')], PREFIX, 30_000);
    expect(ringView(sightings, 30_999, 30_000).live).toEqual(['a']);
    expect(ringView(sightings, 31_000, 30_000).live).toEqual([]);
  });

  it('sees a renewal as a new sighting, by its own clock whatever the Lease says', () => {
    let sightings = sightMembers(new Map(), [lease('a', 'a', 't1')], PREFIX, 1_000);
    sightings = sightMembers(sightings, [lease('a', 'a', 't2')], PREFIX, 20_000);
    expect(ringView(sightings, 45_000, 30_000).live).toEqual(['a']);
  });

  it('takes a live member not seen renewing for the quiet time as quiet, before its Lease runs out', () => {
    let sightings = sightMembers(
      new Map(),
      [lease('a', 'a', 't1'), lease('b', 'b', 't1')],
      PREFIX,
      0,
    );
    sightings = sightMembers(
      sightings,
      [lease('a', 'a', 't2'), lease('b', 'b', 't2')],
      PREFIX,
      1_000,
    );
    sightings = sightMembers(
      sightings,
      [lease('a', 'a', 't3'), lease('b', 'b', 't2')],
      PREFIX,
      3_000,
    );
    const live = ringView(sightings, 6_000, 10_000).live;
    expect(live).toEqual(['a', 'b']);
    expect(quietMembers(sightings, live, 5_999, 5_000)).toEqual([]);
    expect(quietMembers(sightings, live, 6_000, 5_000)).toEqual(['b']);
  });

  it('watches the other quiet members, or none when this replica looks quiet too (stale reads)', () => {
    expect(quietToWatch(['a', 'c'], 'b')).toEqual(['a', 'c']);
    expect(quietToWatch(['a', 'b', 'c'], 'b')).toEqual([]);
  });

  it('holds a member seen once as pending: it may be a dead replica’s Lease left behind', () => {
    const sightings = sightMembers(new Map(), [lease('a', 'a', 't1')], PREFIX, 0);
    expect(ringView(sightings, 1, 30_000)).toEqual({ live: [], pending: ['a'] });
    expect(ringView(sightings, 30_000, 30_000)).toEqual({ live: [], pending: [] });
  });

  it('drops a released or deleted member at once', () => {
    const sightings = sightMembers(
      new Map(),
      [lease('a', 'a', 't1'), lease('b', 'b', 't1')],
      PREFIX,
      0,
    );
    const next = sightMembers(sightings, [lease('a', '', 't1')], PREFIX, 1);
    expect(ringView(next, 2, 30_000)).toEqual({ live: [], pending: [] });
  });

  it('ignores other Leases of the namespace', () => {
    const sightings = sightMembers(
      new Map(),
      [
        { metadata: { name: 'konductor-leader' }, spec: { holderIdentity: 'x' } },
        { metadata: { name: PREFIX }, spec: { holderIdentity: 'x' } },
        lease('b', 'b', 't'),
      ],
      PREFIX,
      0,
    );
    expect(ringView(sightings, 1, 30_000).pending).toEqual(['b']);
  });
});
