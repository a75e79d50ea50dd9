import {
  isMemberName,
  memberFor,
  memberNameOf,
  shardKey,
} from '../../../src/framework/sharding/ring.js';

const keys = Array.from({ length: 3_000 }, (_, i) =>
  shardKey({ group: 'example.com', plural: 'widgets' }, 'team-a', `w-${i}`),
);

function owners(members: readonly string[]): Map<string, string | undefined> {
  return new Map(keys.map((key) => [key, memberFor(key, members)]));
}

describe('the sharding ring', () => {
  it('gives every key to one of the members, the same whatever their order', () => {
    const forward = owners(['a', 'b', 'c']);
    const backward = owners(['c', 'b', 'a']);
    expect([...forward.values()].every((member) => ['a', 'b', 'c'].includes(member!))).toBe(true);
    expect(backward).toEqual(forward);
  });

  it('shares the keys out about evenly', () => {
    const counts = new Map<string, number>();
    for (const member of owners(['a', 'b', 'c']).values())
      counts.set(member!, (counts.get(member!) ?? 0) + 1);
    for (const count of counts.values()) expect(count / keys.length).toBeGreaterThan(0.25);
    for (const count of counts.values()) expect(count / keys.length).toBeLessThan(0.42);
  });

  it('moves only the keys the new member takes when one joins', () => {
    const before = owners(['a', 'b', 'c']);
    const after = owners(['a', 'b', 'c', 'd']);
    const moved = keys.filter((key) => before.get(key) !== after.get(key));
    expect(moved.every((key) => after.get(key) === 'd')).toBe(true);
    expect(moved.length / keys.length).toBeGreaterThan(0.18);
    expect(moved.length / keys.length).toBeLessThan(0.32);
  });

  it('moves only the leaving member’s keys when one leaves', () => {
    const before = owners(['a', 'b', 'c']);
    const after = owners(['a', 'c']);
    for (const key of keys)
      if (before.get(key) !== 'b') expect(after.get(key)).toBe(before.get(key));
  });

  it('has no owner without members', () => {
    expect(memberFor(keys[0]!, [])).toBeUndefined();
  });

  it('keys an object by its resource, namespace and name', () => {
    expect(shardKey({ group: '', plural: 'pods' }, undefined, 'p')).toBe('/pods//p');
    expect(shardKey({ group: 'example.com', plural: 'widgets' }, 'ns', 'w')).toBe(
      'example.com/widgets/ns/w',
    );
  });
});

describe('a replica’s member name', () => {
  it('is its Pod name and a suffix of this start when the name is a valid label value', () => {
    expect(memberNameOf('my-operator-7d9f8b-abcde', 'k3x9q')).toBe(
      'my-operator-7d9f8b-abcde-k3x9q',
    );
  });

  it('differs from one start to the next', () => {
    expect(memberNameOf('replica-a')).toMatch(/^replica-a-[a-z0-9]{5}$/);
    expect(memberNameOf('replica-a')).not.toBe(memberNameOf('replica-a'));
  });

  it('is lower-cased, cut to 63 characters and holds a hash of the whole otherwise', () => {
    const long = `Replica_${'x'.repeat(80)}`;
    const name = memberNameOf(long, 'aaaaa');
    expect(name.length).toBeLessThanOrEqual(63);
    expect(isMemberName(name)).toBe(true);
    expect(memberNameOf(`${long}y`, 'aaaaa')).not.toBe(name);
  });
});
