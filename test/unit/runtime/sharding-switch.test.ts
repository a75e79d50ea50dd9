import type { ApiClient } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';
import {
  COORDINATES_SHARDS_ANNOTATION,
  type Lease,
} from '../../../src/framework/runtime/lease-record.js';
import {
  untilNoShardMembers,
  untilNoUnshardedLeader,
  type ShardingSwitchOptions,
} from '../../../src/framework/runtime/sharding-switch.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';
import { LogCapture } from '../../support/log-capture.js';

const T0 = Date.parse('2026-11-30T20:00:00Z');
const TIMINGS = { leaseDurationMs: 10_000, renewDeadlineMs: 6_000, retryPeriodMs: 1_000 };

function memberLease(member: string, holder: string, renewTime = '1'): Lease {
  return {
    metadata: { name: `op-shard-${member}`, resourceVersion: renewTime },
    spec: { holderIdentity: holder, renewTime },
  };
}

function leaderLease(holder: string, coordinates = false): Lease {
  return {
    metadata: {
      name: 'op-leader',
      resourceVersion: '1',
      annotations: coordinates ? { [COORDINATES_SHARDS_ANNOTATION]: holder } : {},
    },
    spec: { holderIdentity: holder },
  };
}

describe('switching sharding on or off', () => {
  let clock: FakeClock;
  let logs: LogCapture;
  /** What each read answers: the Leases (a list), the leader Lease, or an error to throw. */
  let answer: () => unknown;
  /** When (ms after T0) each read was asked for. */
  let reads: number[];

  beforeEach(() => {
    clock = installFakeClock({ now: T0 });
    logs = new LogCapture();
    reads = [];
  });
  afterEach(() => clock.uninstall());

  function options(): ShardingSwitchOptions {
    const client = {
      request: async () => {
        reads.push(Date.now() - T0);
        const value = answer();
        if (value instanceof Error) throw value;
        return value;
      },
    } as unknown as ApiClient;
    return {
      client,
      namespace: 'ops',
      leaderLease: 'op-leader',
      timings: TIMINGS,
      logger: logs.logger,
      clock,
    };
  }

  /** Starts `wait` and records when (ms after T0) it resolved, and with what. */
  function started(wait: Promise<boolean>): { done?: { at: number; clear: boolean } } {
    const outcome: { done?: { at: number; clear: boolean } } = {};
    void wait.then((clear) => (outcome.done = { at: Date.now() - T0, clear }));
    return outcome;
  }

  describe('a leader without sharding', () => {
    test('starts at once when no member Lease is held', async () => {
      answer = () => ({ items: [memberLease('a', ''), leaderLease('me')] });
      await expect(untilNoShardMembers(options(), new AbortController().signal)).resolves.toBe(
        true,
      );
      expect(reads).toEqual([0]);
      expect(logs.atLeast('warn')).toEqual([]);
    });

    test('waits while a sharded replica renews its member Lease, and starts at the first read after its release', async () => {
      let renewals = 0;
      answer = () => ({ items: [memberLease('a', 'replica-a', String(++renewals))] });
      const outcome = started(untilNoShardMembers(options(), new AbortController().signal));
      await clock.until(() => reads.length === 4, 'four reads', { stepMs: 10 });
      answer = () => ({ items: [memberLease('a', '')] });
      await clock.until(() => outcome.done, 'the wait to end', { stepMs: 10 });

      expect(outcome.done).toEqual({ at: 4_000, clear: true });
      expect(logs.containing('waiting to start: 1 replica(s) with sharding on')).toHaveLength(1);
    });

    test('takes a member Lease unchanged for the lease duration for a dead replica’s', async () => {
      answer = () => ({ items: [memberLease('a', 'replica-a')] });
      const outcome = started(untilNoShardMembers(options(), new AbortController().signal));
      await clock.until(() => outcome.done, 'the wait to end', { stepMs: 10 });

      expect(outcome.done).toEqual({ at: 10_000, clear: true });
    });

    test('starts when the Leases cannot be listed for want of RBAC', async () => {
      answer = () => new ApiError(403, 'leases is forbidden', 'Forbidden');
      await expect(untilNoShardMembers(options(), new AbortController().signal)).resolves.toBe(
        true,
      );
    });

    test('keeps waiting, and says so once, while the Leases cannot be read', async () => {
      answer = () => new Error('connection refused');
      const stop = new AbortController();
      const outcome = started(untilNoShardMembers(options(), stop.signal));
      await clock.until(() => reads.length === 5, 'five reads', { stepMs: 10 });
      stop.abort();
      await clock.until(() => outcome.done, 'the wait to end');

      expect(outcome.done?.clear).toBe(false);
      expect(logs.containing('cannot list Leases')).toHaveLength(1);
    });
  });

  describe('a sharded replica', () => {
    test('handles its shard at once under a coordinator, or with the leader Lease free', async () => {
      for (const leader of [leaderLease('replica-b', true), leaderLease(''), undefined]) {
        answer = () => {
          if (leader) return leader;
          throw new ApiError(404, 'not found', 'NotFound');
        };
        await expect(untilNoUnshardedLeader(options(), new AbortController().signal)).resolves.toBe(
          true,
        );
      }
      expect(logs.atLeast('warn')).toEqual([]);
    });

    test('waits while a replica without sharding leads, and starts once a coordinator holds the Lease', async () => {
      answer = () => leaderLease('old-replica');
      const outcome = started(untilNoUnshardedLeader(options(), new AbortController().signal));
      await clock.until(() => reads.length === 3, 'three reads', { stepMs: 10 });
      answer = () => leaderLease('replica-b', true);
      await clock.until(() => outcome.done, 'the wait to end', { stepMs: 10 });

      expect(outcome.done).toEqual({ at: 3_000, clear: true });
      expect(logs.containing('old-replica leads without sharding')).toHaveLength(1);
    });

    test('waits on a Lease whose mark names another holder', async () => {
      const taken = leaderLease('replica-b', true);
      taken.spec = { holderIdentity: 'old-replica' };
      answer = () => taken;
      const stop = new AbortController();
      const outcome = started(untilNoUnshardedLeader(options(), stop.signal));
      await clock.until(() => reads.length === 3, 'three reads', { stepMs: 10 });
      stop.abort();
      await clock.until(() => outcome.done, 'the wait to end');

      expect(outcome.done?.clear).toBe(false);
    });
  });
});
