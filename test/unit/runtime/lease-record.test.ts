import {
  COORDINATES_SHARDS_ANNOTATION,
  heldByAnother,
  heldByShardCoordinator,
  holderToAnnounce,
  leaseHeldBy,
  leaseReleased,
  leaseSpecKey,
  untilNextAttemptMs,
  type Lease,
} from '../../../src/framework/runtime/lease-record.js';

const T = Date.UTC(2026, 10, 22, 12, 0, 0);
const existing = (spec: Lease['spec']): Lease => ({
  metadata: { name: 'lock', namespace: 'ops', resourceVersion: '5' },
  spec,
});

describe('the Lease a replica writes', () => {
  test('a new Lease starts at transition 0, held by the writer, with whole seconds of duration', () => {
    const lease = leaseHeldBy({ metadata: { name: 'lock', namespace: 'ops' } }, 'a', 1_500, T);
    expect(lease).toMatchObject({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' });
    expect(lease.spec).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 2,
      acquireTime: '2026-11-22T12:00:00.000000Z',
      renewTime: '2026-11-22T12:00:00.000000Z',
      leaseTransitions: 0,
    });
  });

  test('a renewal keeps acquireTime and the transition count', () => {
    const lease = leaseHeldBy(
      existing({ holderIdentity: 'a', acquireTime: 'earlier', leaseTransitions: 3 }),
      'a',
      15_000,
      T,
    );
    expect(lease.spec).toMatchObject({
      acquireTime: 'earlier',
      renewTime: '2026-11-22T12:00:00.000000Z',
      leaseTransitions: 3,
    });
  });

  test('a takeover counts one more transition and acquires now', () => {
    const lease = leaseHeldBy(
      existing({ holderIdentity: 'a', acquireTime: 'earlier', leaseTransitions: 3 }),
      'b',
      15_000,
      T,
    );
    expect(lease.spec).toMatchObject({
      holderIdentity: 'b',
      acquireTime: '2026-11-22T12:00:00.000000Z',
      leaseTransitions: 4,
    });
  });

  test('a shard coordinator marks the Lease with its identity', () => {
    const lease = leaseHeldBy(existing({ holderIdentity: 'a' }), 'b', 15_000, T, true);
    expect(lease.metadata?.annotations).toEqual({ [COORDINATES_SHARDS_ANNOTATION]: 'b' });
    expect(heldByShardCoordinator(lease)).toBe(true);
  });

  test('a replica without sharding takes the mark off, and keeps other annotations', () => {
    const marked = leaseHeldBy(existing({ holderIdentity: 'a' }), 'a', 15_000, T, true);
    marked.metadata!.annotations!['team'] = 'ops';
    const lease = leaseHeldBy(marked, 'a', 15_000, T);
    expect(lease.metadata?.annotations).toEqual({ team: 'ops' });
    expect(heldByShardCoordinator(lease)).toBe(false);
  });

  test('a mark naming another holder does not count: a writer that kept it took the Lease', () => {
    const marked = leaseHeldBy(existing({ holderIdentity: 'a' }), 'a', 15_000, T, true);
    const taken = { ...marked, spec: { ...marked.spec, holderIdentity: 'b' } };
    expect(heldByShardCoordinator(taken)).toBe(false);
    expect(heldByShardCoordinator(leaseReleased(marked, T))).toBe(false);
    expect(leaseReleased(marked, T).metadata?.annotations).toEqual({});
  });

  test('a release leaves no holder and a 1 s duration, so a successor takes over at once', () => {
    const lease = leaseReleased(
      existing({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 2 }),
      T,
    );
    expect(lease.spec).toEqual({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      acquireTime: '2026-11-22T12:00:00.000000Z',
      renewTime: '2026-11-22T12:00:00.000000Z',
      leaseTransitions: 2,
    });
  });

  test('equal specs have equal keys whatever the field order', () => {
    expect(leaseSpecKey({ renewTime: 'r', holderIdentity: 'a' })).toBe(
      leaseSpecKey({ holderIdentity: 'a', renewTime: 'r' }),
    );
    expect(leaseSpecKey({ holderIdentity: 'a' })).not.toBe(leaseSpecKey({ holderIdentity: 'b' }));
  });
});

describe('what a replica concludes from the Lease it saw', () => {
  const seen = { holder: 'a', observedAt: T };

  test('another holder counts until the lease duration has passed since the spec last changed, by our clock', () => {
    expect(heldByAnother(seen, 'b', 600, T + 600)).toBe(true);
    expect(heldByAnother(seen, 'b', 600, T + 601)).toBe(false);
    expect(heldByAnother(seen, 'a', 600, T)).toBe(false);
    expect(heldByAnother({ holder: '', observedAt: T }, 'b', 600, T)).toBe(false);
  });

  test('a standby waits a retry period, or only until just after the Lease expires', () => {
    expect(untilNextAttemptMs(seen, 'b', 2_000, 1_450, T)).toBe(1_450);
    expect(untilNextAttemptMs(seen, 'b', 2_000, 1_450, T + 1_450)).toBe(551);
    expect(untilNextAttemptMs(seen, 'b', 2_000, 1_450, T + 2_500)).toBe(1_450); // already expired: the normal pace
    expect(untilNextAttemptMs(seen, 'a', 2_000, 1_450, T + 1_900)).toBe(1_450); // our own Lease
  });
});

describe('what a standby announces', () => {
  test('another replica holding the Lease is announced the first time it is seen', () => {
    expect(holderToAnnounce('pod-a-1f2e3d', 'pod-b-4c5b6a', '')).toBe('pod-a-1f2e3d');
  });

  test('the same leader is not announced again; a new one is', () => {
    expect(holderToAnnounce('pod-a-1f2e3d', 'pod-b-4c5b6a', 'pod-a-1f2e3d')).toBeUndefined();
    expect(holderToAnnounce('pod-c-7a8b9c', 'pod-b-4c5b6a', 'pod-a-1f2e3d')).toBe('pod-c-7a8b9c');
  });

  test('a free Lease, or one held by this replica, announces nothing', () => {
    expect(holderToAnnounce('', 'pod-b-4c5b6a', 'pod-a-1f2e3d')).toBeUndefined();
    expect(holderToAnnounce('pod-b-4c5b6a', 'pod-b-4c5b6a', '')).toBeUndefined();
  });

  test('a holder id written to break log lines is announced without control characters, and cut to 128 characters', () => {
    expect(holderToAnnounce('evil\nfake log line\u001b[31m', 'me', '')).toBe(
      'evilfake log line[31m',
    );
    expect(holderToAnnounce('x'.repeat(1_000), 'me', '')).toBe('x'.repeat(128));
  });
});
