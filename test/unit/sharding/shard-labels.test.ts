import { ShardLabels } from '../../../src/framework/sharding/shard-labels.js';

const labels = new ShardLabels('konductor.dev');
const object = (values: Record<string, string>) => ({ metadata: { labels: values } });

describe('the shard labels', () => {
  it('live under the operator identity', () => {
    expect(labels.shard).toBe('konductor.dev/shard');
    expect(labels.drain).toBe('konductor.dev/drain');
    expect(labels.memberSelector('pod-1')).toBe('konductor.dev/shard=pod-1');
    expect(labels.unassignedSelector).toBe('!konductor.dev/shard');
  });

  it('read an object’s member and drain request', () => {
    expect(labels.memberOf(object({ 'konductor.dev/shard': 'a' }))).toBe('a');
    expect(labels.memberOf(object({}))).toBeUndefined();
    expect(labels.isDraining(object({ 'konductor.dev/drain': 'true' }))).toBe(true);
  });

  it('release an object only while it is still this member’s and draining', () => {
    expect(labels.releasePatch('a')).toEqual([
      { op: 'test', path: '/metadata/labels/konductor.dev~1shard', value: 'a' },
      { op: 'test', path: '/metadata/labels/konductor.dev~1drain', value: 'true' },
      { op: 'remove', path: '/metadata/labels/konductor.dev~1shard' },
      { op: 'remove', path: '/metadata/labels/konductor.dev~1drain' },
    ]);
  });

  it('clear a drain request when assigning, only on the copy the placement was decided on', () => {
    expect(labels.assignPatch('b', '7')).toEqual({
      metadata: {
        resourceVersion: '7',
        labels: { 'konductor.dev/shard': 'b', 'konductor.dev/drain': null },
      },
    });
    expect(labels.drainPatch('8')).toEqual({
      metadata: { resourceVersion: '8', labels: { 'konductor.dev/drain': 'true' } },
    });
  });
});
