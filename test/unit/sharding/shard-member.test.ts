import type { ApiClient } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';
import type { Resource } from '../../../src/framework/api/resource.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import { memberFor, shardKey } from '../../../src/framework/sharding/ring.js';
import { ShardLabels } from '../../../src/framework/sharding/shard-labels.js';
import { ShardMember } from '../../../src/framework/sharding/shard-member.js';

const labels = new ShardLabels('konductor.dev');
const widgets = { group: 'example.com', version: 'v1', plural: 'widgets' } as Resource;
const HEIRS = ['heir-a', 'heir-b'];

function widget(name: string, member: string, extra: Record<string, string> = {}): KubeObject {
  return {
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      labels: { [labels.shard]: member, ...extra },
    },
  };
}

/** A widget of the departed member `gone` that hashing gives to `heir` among {@link HEIRS}. */
function inheritedBy(heir: string): KubeObject {
  for (let i = 0; ; i++) {
    if (memberFor(shardKey(widgets, 'ns', `w-${i}`), HEIRS) === heir)
      return widget(`w-${i}`, 'gone');
  }
}

/** An heir of `gone` whose reads answer `now` (undefined: 404), counting them. */
function heir(name: string, now?: KubeObject): { member: ShardMember; reads: () => number } {
  let reads = 0;
  const client = {
    request: async () => {
      reads++;
      if (!now) throw new ApiError(404, 'not found');
      return now;
    },
  } as unknown as ApiClient;
  const member = new ShardMember(name, labels, client, silentLogger());
  member.inherit(new Map([['gone', { heirs: HEIRS }]]));
  return { member, reads: () => reads };
}

describe('a member’s verdict on its watches’ events', () => {
  it('watches the objects of each departed member it is an heir of, one watch each', () => {
    const { member } = heir('heir-a');
    expect(member.inherit(new Map([['gone', { heirs: HEIRS }]])).selectors).toEqual([
      'konductor.dev/shard=gone',
    ]);
    expect(member.inherit(new Map([['gone', { heirs: ['heir-b'] }]])).selectors).toEqual([]);
  });

  it('says its share grew when another heir of a departed member it already inherits from is dropped', async () => {
    const { member } = heir('heir-a');
    expect(member.inherit(new Map([['gone', { heirs: HEIRS }]])).grown).toBe(false);
    expect(member.inherit(new Map([['gone', { heirs: ['heir-a'] }]])).grown).toBe(true);
    expect(await member.verdict(widgets, 'ADDED', inheritedBy('heir-b'))).toBe('handle');
  });

  it('does not say its share grew when it becomes an heir: the new watch lists its share anyway', () => {
    const member = new ShardMember('heir-a', labels, {} as ApiClient, silentLogger());
    expect(member.inherit(new Map([['gone', { heirs: ['heir-a'] }]])).grown).toBe(false);
  });

  it('handles its share of a departed member’s objects, and forgets another heir’s', async () => {
    const { member } = heir('heir-a');
    expect(await member.verdict(widgets, 'ADDED', inheritedBy('heir-a'))).toBe('handle');
    expect(await member.verdict(widgets, 'ADDED', inheritedBy('heir-b'))).toBe('forget');
  });

  it('ignores a departed member’s drain request: the object is relabelled for its heir instead', async () => {
    const { member } = heir('heir-a');
    const object = inheritedBy('heir-a');
    object.metadata!.labels![labels.drain] = 'true';
    expect(await member.verdict(widgets, 'MODIFIED', object)).toBe('handle');
  });

  it('forgets another heir’s object leaving its watch without reading it', async () => {
    const { member, reads } = heir('heir-a');
    expect(await member.verdict(widgets, 'DELETED', inheritedBy('heir-b'))).toBe('forget');
    expect(reads()).toBe(0);
  });

  it('skips a DELETED that only said the object was relabelled for this heir: its own watch delivers it', async () => {
    const object = inheritedBy('heir-a');
    const relabelled = widget(object.metadata!.name!, 'heir-a');
    const { member } = heir('heir-a', relabelled);
    expect(await member.verdict(widgets, 'DELETED', object)).toBe('skip');
  });

  it('runs the deletion of an inherited object that is gone', async () => {
    const { member } = heir('heir-a');
    expect(await member.verdict(widgets, 'DELETED', inheritedBy('heir-a'))).toBe('handle');
  });

  it('drops a departed member’s copy that arrives after its own copy of a relabelled object', () => {
    const { member } = heir('heir-a');
    const inherited = inheritedBy('heir-a');
    const own = widget(inherited.metadata!.name!, 'heir-a');
    const events = [
      { type: 'ADDED' as const, object: own },
      { type: 'MODIFIED' as const, object: inherited },
    ];
    expect(member.eventsToActOn(events)).toEqual([events[0]]);
    expect(
      member.eventsToActOn([{ type: 'MODIFIED' as const, object: inherited }]),
    ).toBeUndefined();
  });

  it('acts on every event of an object never relabelled for it', () => {
    const { member } = heir('heir-a');
    const events = [{ type: 'MODIFIED' as const, object: inheritedBy('heir-a') }];
    expect(member.eventsToActOn(events)).toEqual(events);
  });

  it('drops every later copy of an inherited object whose deletion it handled', async () => {
    const { member } = heir('heir-a');
    const object = inheritedBy('heir-a');
    expect(await member.verdict(widgets, 'DELETED', object)).toBe('handle');
    const relabelled = widget(object.metadata!.name!, 'heir-a');
    expect(member.eventsToActOn([{ type: 'ADDED' as const, object: relabelled }])).toBeUndefined();
  });

  it('forgets the oldest departed member it no longer inherits from once it remembers over 1,000', () => {
    const member = new ShardMember('heir-a', labels, {} as ApiClient, silentLogger());
    for (let i = 0; i <= 1_000; i++)
      member.inherit(new Map([[`gone-${i}`, { heirs: ['heir-a'] }]]));
    const leftover = (departed: string) => [
      { type: 'MODIFIED' as const, object: widget('w', departed) },
    ];
    expect(member.eventsToActOn(leftover('gone-1'))).toBeUndefined();
    expect(member.eventsToActOn(leftover('gone-0'))).toEqual(leftover('gone-0'));
  });
});
