import type { ApiClient } from '../../../src/framework/api/api-client.js';
import { silentLogger } from '../../../src/framework/observability/logger.js';
import { noMetrics } from '../../../src/framework/observability/metrics.js';
import type { MemberLease } from '../../../src/framework/sharding/ring-membership.js';
import { RingWatch } from '../../../src/framework/sharding/ring-watch.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';

const PREFIX = 'op-shard-';
const HEIRS = 'konductor.dev/heirs';
const T0 = Date.parse('2026-11-30T08:00:00Z');

function lease(member: string, holder: string | null, heirs?: string): MemberLease {
  return {
    metadata: {
      name: `${PREFIX}${member}`,
      resourceVersion: '1',
      ...(heirs ? { annotations: { [HEIRS]: heirs } } : {}),
    },
    spec: { holderIdentity: holder },
  };
}

describe('the ring watch', () => {
  let clock: FakeClock;
  let ring: RingWatch | undefined;
  /** When (ms after T0) each reading of the Leases was asked for. */
  let reads: number[];
  let leases: MemberLease[];

  beforeEach(() => {
    clock = installFakeClock({ now: T0 });
    reads = [];
    // Member b released its Lease: it departed, and has no heirs yet.
    leases = [lease('a', 'replica-a'), lease('b', null)];
  });
  afterEach(async () => {
    await ring?.stop();
    ring = undefined;
    clock.uninstall();
  });

  function watch(onQuiet?: (members: readonly string[]) => void): RingWatch {
    const client = {
      request: async () => {
        reads.push(Date.now() - T0);
        return { items: leases };
      },
    } as unknown as ApiClient;
    ring = new RingWatch({
      client,
      namespace: 'ns',
      prefix: PREFIX,
      heirsKey: HEIRS,
      leaseDurationMs: 10_000,
      periodMs: 1_000,
      logger: silentLogger(),
      metrics: noMetrics,
      clock,
      onChange: () => undefined,
      onQuiet,
    });
    ring.start();
    return ring;
  }

  test('reads the Leases every 200 ms while a departed member has no heirs, then every period', async () => {
    watch();
    await clock.until(() => reads.length === 3, 'three quick readings', { stepMs: 1 });
    leases = [lease('a', 'replica-a'), lease('b', null, 'a')];
    await clock.until(() => reads.length === 5, 'the heirs read, then one reading more', {
      stepMs: 1,
    });

    expect(reads).toEqual([0, 200, 400, 600, 1_600]);
  });

  test('reads the Leases at once when asked to, without waiting for the period', async () => {
    leases = [lease('a', 'replica-a')];
    const watching = watch();
    await clock.until(() => reads.length === 1, 'the first reading');
    await clock.advanceAsync(300);
    watching.readNow();
    await clock.until(() => reads.length === 2, 'the reading asked for');

    expect(reads).toEqual([0, 300]);
  });

  test('names a member whose Lease stopped changing once half the lease duration passed, and one gone without heirs', async () => {
    let renewals = 0;
    const quiet: Array<{ at: number; members: string[] }> = [];
    leases = [lease('a', 'replica-a'), lease('c', 'replica-c')];
    watch((members) => quiet.push({ at: Date.now() - T0, members: [...members] }));
    // Member a renews at every reading until the fourth; member c at the first two only.
    for (let read = 1; read <= 9; read++) {
      await clock.until(() => reads.length === read, `reading ${read}`, { stepMs: 10 });
      renewals += 1;
      leases = [
        {
          ...lease('a', 'replica-a'),
          spec: { holderIdentity: 'replica-a', renewTime: String(Math.min(renewals, 4)) },
        },
        {
          ...lease('c', 'replica-c'),
          spec: { holderIdentity: 'replica-c', renewTime: String(Math.min(renewals, 2)) },
        },
      ];
    }
    leases = [lease('a', null)];
    await clock.until(() => quiet.length === 2, 'a gone without heirs', { stepMs: 10 });

    // c's Lease last changed at the reading of 2 s: quiet at the first reading 5 s after.
    expect(quiet).toEqual([
      { at: 7_000, members: ['c'] },
      { at: 9_000, members: ['a'] },
    ]);
  });
});
