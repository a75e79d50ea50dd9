import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { LeaderElector, type Lease } from '../../../src/framework/runtime/leader-election.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';

// Small durations keep the specs quick; the real API server answers locally within milliseconds.
const LEASE_MS = 600;
const RENEW_MS = 400;
const RETRY_MS = 100;
/** For the spec that must tell a released Lease from an expired one. */
const LONG_LEASE_MS = 10_000;
const LONG_RENEW_MS = 6_000;
const NAME = 'operator-lock';
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

interface Replica {
  identity: string;
  elector: LeaderElector;
  done: Promise<void>;
  log: string[];
}

describe('leader election on a real API server', () => {
  let kc: KubeConfig;
  let namespace: string;
  let client: ApiClient;
  let replicas: Replica[];

  beforeAll(() => {
    kc = sharedKubeConfig();
  });
  beforeEach(async () => {
    namespace = await uniqueNamespace(kc, 'lease');
    client = new ApiClient(kc);
    replicas = [];
  });
  afterEach(async () => {
    await Promise.all(replicas.map((r) => r.elector.stop()));
    await Promise.all(replicas.map((r) => r.done));
    client.close();
  });

  function start(prefix: string, leaseDurationMs = LEASE_MS, renewDeadlineMs = RENEW_MS): Replica {
    const identity = `${prefix}-${randomBytes(3).toString('hex')}`;
    const elector = new LeaderElector({
      client,
      namespace,
      name: NAME,
      identity,
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs: RETRY_MS,
    });
    const log: string[] = [];
    const done = elector.run({
      onStartedLeading: () => void log.push('started'),
      onStoppedLeading: () => void log.push('stopped'),
    });
    const replica = { identity, elector, done, log };
    replicas.push(replica);
    return replica;
  }

  /** Starts two replicas and waits until one leads; returns [leader, follower]. */
  async function twoReplicas(
    leaseDurationMs?: number,
    renewDeadlineMs?: number,
  ): Promise<[Replica, Replica]> {
    const a = start('a', leaseDurationMs, renewDeadlineMs);
    const b = start('b', leaseDurationMs, renewDeadlineMs);
    await waitFor(() => a.elector.isLeader || b.elector.isLeader, {
      what: 'one replica to lead',
      timeoutMs: 10_000,
    });
    return a.elector.isLeader ? [a, b] : [b, a];
  }

  async function readLease(): Promise<Lease> {
    return client.request<Lease>(
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${NAME}`,
    );
  }

  test('exactly one of two replicas leads at any time', async () => {
    // Renewing within 3 s, not 400 ms: the leader keeps its Lease through the API server's stalls on a
    // busy machine, so the spec sees the one leader throughout rather than a legitimate handover.
    const [leader, follower] = await twoReplicas(4_000, 3_000);
    let samples = 0;
    let both = 0;
    const until = Date.now() + 3_000;
    // At least 3 s and 40 samples, however slowly a busy machine wakes the loop.
    while (Date.now() < until || samples < 40) {
      samples++;
      if (leader.elector.isLeader && follower.elector.isLeader) both++;
      await sleep(50);
    }
    expect(both).toBe(0);
    expect(leader.elector.isLeader).toBe(true);
    expect(follower.log).toEqual([]);

    const lease = await readLease();
    expect(lease.spec?.holderIdentity).toBe(leader.identity);
    expect(lease.spec?.leaseDurationSeconds).toBe(4);
    expect(lease.spec?.renewTime).toMatch(MICRO_TIME);
    expect(lease.spec?.acquireTime).toMatch(MICRO_TIME);
  });

  test('after the leader stops and releases the Lease, the other replica leads without waiting for it to expire', async () => {
    // A long lease, so a takeover through expiry could not pass for one through release.
    const [leader, follower] = await twoReplicas(LONG_LEASE_MS, LONG_RENEW_MS);
    await sleep(3 * RETRY_MS); // the follower has seen a few renewals
    const lastRenewal = Date.parse((await readLease()).spec!.renewTime!);

    await leader.elector.stop();
    expect(leader.log).toEqual(['started', 'stopped']);
    await waitFor(() => follower.elector.isLeader, {
      what: 'the follower to take over',
      timeoutMs: LONG_LEASE_MS,
    });
    expect(Date.parse((await readLease()).spec!.acquireTime!)).toBeLessThan(
      lastRenewal + LONG_LEASE_MS,
    );
    expect(follower.log).toEqual(['started']);

    const lease = await readLease();
    expect(lease.spec?.holderIdentity).toBe(follower.identity);
    expect(lease.spec?.renewTime).toMatch(MICRO_TIME);
    expect(lease.spec?.leaseTransitions).toBeGreaterThanOrEqual(1);
  });

  test('after the leader dies without releasing, the other replica leads once the lease expires', async () => {
    const [leader, follower] = await twoReplicas();
    await sleep(3 * RETRY_MS);
    const before = (await readLease()).spec?.leaseTransitions ?? 0;

    await leader.elector.stop({ release: false });
    const held = await readLease();
    expect(held.spec?.holderIdentity).toBe(leader.identity); // still held: nobody released it
    await waitFor(() => follower.elector.isLeader, {
      what: 'the follower to take over',
      timeoutMs: 5_000,
    });
    // The follower waits out a whole lease from the last renewal it saw; how soon after is the
    // elector's unit spec's, on the fake clock.
    const taken = await readLease();
    expect(Date.parse(taken.spec!.acquireTime!)).toBeGreaterThanOrEqual(
      Date.parse(held.spec!.renewTime!) + LEASE_MS,
    );

    const lease = await readLease();
    expect(lease.spec?.holderIdentity).toBe(follower.identity);
    expect(lease.spec?.renewTime).toMatch(MICRO_TIME);
    expect(lease.spec?.leaseTransitions).toBe(before + 1);
  });
});
