import type { KubeObject } from '../../../src/framework/index.js';
import { memberDied, memberWake, MemberWake } from '../../../src/handlers/etcd/member-wake.js';

const pod = (status: Record<string, unknown>, metadata: Record<string, unknown> = {}): KubeObject => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'db-1', ...metadata }, status });

describe('a member Pod change shows its member died', () => {
  it('when the Pod is deleted', () => {
    expect(memberDied('DELETED', pod({ phase: 'Running' }))).toBe(true);
  });

  it('when the Pod is being deleted', () => {
    expect(memberDied('MODIFIED', pod({ phase: 'Running' }, { deletionTimestamp: '2026-01-01T00:00:00Z' }))).toBe(true);
  });

  it('when the Pod failed or finished', () => {
    expect(memberDied('MODIFIED', pod({ phase: 'Failed' }))).toBe(true);
    expect(memberDied('MODIFIED', pod({ phase: 'Succeeded' }))).toBe(true);
  });

  it('when its etcd container terminated', () => {
    expect(memberDied('MODIFIED', pod({ phase: 'Running', containerStatuses: [{ name: 'etcd', state: { terminated: { exitCode: 137 } } }] }))).toBe(true);
  });

  it('not when a member starts or becomes ready', () => {
    expect(memberDied('ADDED', pod({ phase: 'Pending' }))).toBe(false);
    expect(memberDied('MODIFIED', pod({ phase: 'Running', containerStatuses: [{ name: 'etcd', state: { running: {} } }] }))).toBe(false);
  });
});

describe('the cluster worker\'s wake', () => {
  it('is one per cluster memo, shared by the worker and the Pod handler', () => {
    const memo = {};
    expect(memberWake(memo)).toBe(memberWake(memo));
    expect(memberWake({})).not.toBe(memberWake(memo));
  });

  it('releases a waiting worker', async () => {
    const wake = new MemberWake();
    const woken = wake.next(new AbortController().signal);
    wake.wake();
    await expect(woken).resolves.toBeUndefined();
    expect(wake.take()).toBe(true);
  });

  it('is kept when it comes while the worker is busy, so its next wait returns at once', async () => {
    const wake = new MemberWake();
    wake.wake();
    await expect(wake.next(new AbortController().signal)).resolves.toBeUndefined();
    expect(wake.take()).toBe(true);
    expect(wake.take()).toBe(false);
  });

  it('lets a waiting worker go when it stops', async () => {
    const stop = new AbortController();
    const woken = new MemberWake().next(stop.signal);
    stop.abort();
    await expect(woken).resolves.toBeUndefined();
  });
});
