import type { ApiClient, RequestInit } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';
import type { Clock } from '../../../src/framework/clock/clock.js';
import type { LongTimeout } from '../../../src/framework/clock/long-timeout.js';
import {
  formatMicroTime,
  LeaderElector,
  type Lease,
  type LeaseSpec,
  type LeaderElectionOptions,
} from '../../../src/framework/runtime/leader-election.js';
import { attemptTimeoutMs } from '../../../src/framework/runtime/lease-renewal.js';
import { LogCapture } from '../../support/log-capture.js';

// Durations on a virtual clock (below): the bounds are multiples of them, and no spec waits in real time.
const LEASE_MS = 600;
const RENEW_MS = 400;
const RETRY_MS = 100;
const NAMESPACE = 'ops';
const NAME = 'operator-lock';
const COLLECTION = `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases`;
const LEASE_PATH = `${COLLECTION}/${NAME}`;
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** One turn of the event loop: lets requests and promise chains move on. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Virtual time for every elector of a spec (the framework's `Clock`): it moves only when a spec lets
 * it, from one due wait to the next, after the work in flight has settled. A busy machine's late
 * timers cannot blur what the specs measure, and a 600 ms lease costs no real time.
 */
class VirtualClock implements Clock {
  private time = Date.UTC(2026, 10, 22, 12, 0, 0);
  private sequence = 0;
  private readonly timers: Array<{ at: number; seq: number; fire: () => void }> = [];

  readonly now = (): number => this.time;

  /** Like the framework's sleep: resolves when due, or at once when `signal` aborts; never rejects. */
  readonly sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timeout = this.setTimeout(resolve, ms);
      signal?.addEventListener(
        'abort',
        () => {
          timeout.clear();
          resolve();
        },
        { once: true },
      );
    });

  readonly setTimeout = (fn: () => void, ms: number): LongTimeout => {
    const timer = { at: this.time + Math.max(0, ms), seq: ++this.sequence, fire: fn };
    this.timers.push(timer);
    this.timers.sort((x, y) => x.at - y.at || x.seq - y.seq);
    return {
      clear: () => {
        const index = this.timers.indexOf(timer);
        if (index >= 0) this.timers.splice(index, 1);
      },
    };
  };

  /** Lets `ms` pass, firing each wait that falls due in order, with the work it starts settled in between. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await settle();
      if (!this.fireNextBy(end)) break;
    }
    this.time = end;
    await settle();
  }

  /** Lets time pass, a due wait at a time, until `condition` holds; fails after `limitMs` of virtual time. */
  async until(condition: () => boolean, what: string, limitMs = 5_000): Promise<void> {
    const deadline = this.time + limitMs;
    for (;;) {
      await settle();
      if (condition()) return;
      if (!this.fireNextBy(deadline)) throw new Error(`timed out waiting for: ${what}`);
    }
  }

  /** Moves time to the earliest due wait and fires it, if one falls due by `limit`. */
  private fireNextBy(limit: number): boolean {
    const next = this.timers[0];
    if (!next || next.at > limit) return false;
    this.timers.shift();
    this.time = next.at;
    next.fire();
    return true;
  }
}

/** Enough turns for a request to the fake server and everything it sets off. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await turn();
}

/** How a fake client answers: normally, with a 500, or never. */
type Mode = 'ok' | 'fail' | 'hang';

/** An in-memory Lease store with the API server's optimistic concurrency and MicroTime validation. */
class FakeLeaseServer {
  private readonly leases = new Map<string, Lease>();
  private version = 0;
  /** Every accepted write, in order. */
  readonly writes: { method: string; by: string; spec: LeaseSpec }[] = [];

  lease(): Lease | undefined {
    const lease = this.leases.get(LEASE_PATH);
    return lease && clone(lease);
  }

  /** Overwrites the stored Lease as another party would (bumping its resourceVersion). */
  put(spec: LeaseSpec): void {
    const lease = this.leases.get(LEASE_PATH)!;
    this.leases.set(LEASE_PATH, {
      ...lease,
      metadata: { ...lease.metadata, resourceVersion: String(++this.version) },
      spec,
    });
  }

  /** While set, the server is frozen (SIGSTOP): requests wait for it, then are answered in order. */
  private frozen: Promise<void> | undefined;
  private thawFrozen: () => void = () => undefined;

  /** Freezes the server: requests arriving from now on wait until {@link thaw}. */
  freeze(): void {
    this.frozen = new Promise((resolve) => (this.thawFrozen = resolve));
  }

  /** Lets the server go on: the requests that waited are answered, even those their client gave up on. */
  thaw(): void {
    this.frozen = undefined;
    this.thawFrozen();
  }

  /** A client for one replica; `mode` can be switched at any time. */
  client(by: string): { client: ApiClient; mode: Mode } {
    const handle = { mode: 'ok' as Mode, client: undefined as unknown as ApiClient };
    const request = async (
      method: string,
      path: string,
      init: RequestInit = {},
    ): Promise<unknown> => {
      await turn(); // an answer takes a moment, as over a network
      while (this.frozen) await this.frozen;
      if (handle.mode === 'fail')
        throw new ApiError(500, `${method} ${path}: 500 injected failure`);
      if (handle.mode === 'hang') return new Promise(() => undefined);
      return this.handle(method, path, init.body as Lease | undefined, by);
    };
    handle.client = { request } as unknown as ApiClient;
    return handle;
  }

  private handle(method: string, path: string, body: Lease | undefined, by: string): Lease {
    if (method === 'GET') {
      const lease = this.leases.get(path);
      if (!lease) throw new ApiError(404, `GET ${path}: 404 not found`, 'NotFound');
      return clone(lease);
    }
    if (!body?.spec) throw new ApiError(400, `${method} ${path}: no body`);
    for (const field of ['acquireTime', 'renewTime'] as const) {
      const value = body.spec[field];
      if (value !== undefined && !MICRO_TIME.test(value))
        throw new ApiError(400, `${method} ${path}: bad MicroTime ${field} ${value}`, 'BadRequest');
    }
    let key = path;
    if (method === 'POST') {
      expect(path).toBe(COLLECTION);
      key = `${path}/${body.metadata?.name}`;
      if (this.leases.has(key))
        throw new ApiError(409, `POST ${path}: 409 already exists`, 'AlreadyExists');
    } else if (method === 'PUT') {
      const current = this.leases.get(path);
      if (!current) throw new ApiError(404, `PUT ${path}: 404 not found`, 'NotFound');
      if (body.metadata?.resourceVersion !== current.metadata?.resourceVersion) {
        throw new ApiError(409, `PUT ${path}: 409 the object has been modified`, 'Conflict');
      }
    } else {
      throw new ApiError(405, `${method} ${path}: 405`);
    }
    const stored: Lease = clone({
      ...body,
      metadata: { ...body.metadata, resourceVersion: String(++this.version) },
    });
    this.leases.set(key, stored);
    this.writes.push({ method, by, spec: clone(body.spec) });
    return clone(stored);
  }
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Records callback calls in one shared log, so specs can check their order across replicas. */
function callbacks(
  id: string,
  log: string[],
): { onStartedLeading(): void; onStoppedLeading(): void } {
  return {
    onStartedLeading: () => void log.push(`${id} started`),
    onStoppedLeading: () => void log.push(`${id} stopped`),
  };
}

describe('LeaderElector', () => {
  let server: FakeLeaseServer;
  let electors: LeaderElector[];
  let runs: Promise<void>[];
  let log: string[];
  let clock: VirtualClock;

  beforeEach(() => {
    clock = new VirtualClock();
    server = new FakeLeaseServer();
    electors = [];
    runs = [];
    log = [];
  });
  afterEach(async () => {
    await Promise.all(electors.map((e) => e.stop()));
    await Promise.all(runs);
  });

  /** Creates an elector with its own fake client and starts its campaign. */
  function start(
    identity: string,
    options: Partial<LeaderElectionOptions> = {},
  ): { elector: LeaderElector; api: { mode: Mode }; done: Promise<void>; finished: () => boolean } {
    const api = server.client(identity);
    const elector = new LeaderElector({
      client: api.client,
      namespace: NAMESPACE,
      name: NAME,
      identity,
      leaseDurationMs: LEASE_MS,
      renewDeadlineMs: RENEW_MS,
      retryPeriodMs: RETRY_MS,
      clock,
      ...options,
    });
    electors.push(elector);
    const done = elector.run(callbacks(identity, log));
    runs.push(done);
    let finished = false;
    void done.then(() => (finished = true));
    return { elector, api, done, finished: () => finished };
  }

  test('creates a missing Lease, leads, and calls onStartedLeading once', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    await clock.advance(5 * RETRY_MS); // several renewals

    const lease = server.lease()!;
    expect(lease.apiVersion).toBe('coordination.k8s.io/v1');
    expect(lease.kind).toBe('Lease');
    expect(lease.metadata?.name).toBe(NAME);
    expect(lease.spec).toMatchObject({
      holderIdentity: 'a',
      leaseDurationSeconds: 1,
      leaseTransitions: 0,
    });
    expect(server.writes[0]!.method).toBe('POST');
    expect(server.writes.filter((w) => w.method === 'PUT').length).toBeGreaterThanOrEqual(2);
    // Renewals move renewTime and keep acquireTime.
    expect(lease.spec?.acquireTime).toBe(server.writes[0]!.spec.acquireTime);
    expect(lease.spec?.renewTime).not.toBe(lease.spec?.acquireTime);
    expect(log).toEqual(['a started']);

    await a.elector.stop();
    await clock.until(a.finished, "a's run() to resolve");
    expect(log).toEqual(['a started', 'a stopped']);
  });

  test('a second replica does not lead while the first renews', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    const b = start('b');
    const until = clock.now() + 3 * LEASE_MS;
    while (clock.now() < until) {
      expect(b.elector.isLeader).toBe(false);
      expect(a.elector.isLeader).toBe(true);
      await clock.advance(10);
    }
    expect(server.lease()!.spec?.holderIdentity).toBe('a');
    expect(server.writes.every((w) => w.by === 'a')).toBe(true);
    expect(log).toEqual(['a started']);
  });

  test('replicas starting together on a missing Lease: one creates it, the other sees the conflict and waits', async () => {
    const a = start('a');
    const b = start('b');
    await clock.until(() => a.elector.isLeader || b.elector.isLeader, 'someone to lead');
    await clock.advance(3 * RETRY_MS);
    expect([a.elector.isLeader, b.elector.isLeader].filter(Boolean)).toHaveLength(1);
    expect(server.writes.filter((w) => w.method === 'POST')).toHaveLength(1);
    expect(log).toHaveLength(1);
  });

  test('when the leader cannot reach the API server, another replica takes over after about the lease duration', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    const b = start('b');
    await clock.advance(3 * RETRY_MS); // b has seen a's renewals

    a.api.mode = 'fail';
    const failedAt = clock.now();
    await clock.until(() => b.elector.isLeader, 'b to take over', 5_000);
    const tookOverAfter = clock.now() - failedAt;

    // b waits out the lease from the last renewal it saw, which came at most one retry period before the failure.
    expect(tookOverAfter).toBeGreaterThanOrEqual(LEASE_MS - 2 * RETRY_MS);
    expect(tookOverAfter).toBeLessThan(LEASE_MS + 10 * RETRY_MS);
    // a gave up (by its renew deadline) before b began to lead: never two leaders.
    expect(log).toEqual(['a started', 'a stopped', 'b started']);
    await clock.until(a.finished, "a's run() to resolve");
    expect(server.lease()!.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  test('a leader that cannot renew within the renew deadline stops leading and run() resolves', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    let resolved = false;
    void a.done.then(() => (resolved = true));

    a.api.mode = 'fail';
    const failedAt = clock.now();
    await clock.until(() => log.includes('a stopped'), 'a to stop leading', 5_000);
    const stoppedAfter = clock.now() - failedAt;

    expect(stoppedAfter).toBeGreaterThanOrEqual(RENEW_MS - 2 * RETRY_MS);
    expect(stoppedAfter).toBeLessThan(RENEW_MS + 5 * RETRY_MS);
    expect(a.elector.isLeader).toBe(false);
    await clock.until(a.finished, "a's run() to resolve");
    expect(resolved).toBe(true);
    expect(log).toEqual(['a started', 'a stopped']);
  });

  test('a renewal that never answers does not keep a leader past its renew deadline', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    a.api.mode = 'hang';
    const hungAt = clock.now();
    await clock.until(a.finished, "a's run() to resolve");
    expect(clock.now() - hungAt).toBeLessThan(RENEW_MS + 5 * RETRY_MS);
    expect(log).toEqual(['a started', 'a stopped']);
  });

  /** The framework's defaults (30 s / 20 s / 2 s), not this file's short durations. */
  const DEFAULT_TIMINGS = {
    leaseDurationMs: undefined,
    renewDeadlineMs: undefined,
    retryPeriodMs: undefined,
  };

  test.each([0, 1_000, 1_999])(
    'on the default timings, a leader keeps leading through a 10 s API server freeze that starts %i ms after a renewal, and renews once it thaws',
    async (phase) => {
      const a = start('a', DEFAULT_TIMINGS);
      await clock.until(() => a.elector.isLeader, 'a to lead');
      await clock.advance(10_000); // steady renewals, one just now
      await clock.advance(phase);
      server.freeze();
      await clock.advance(10_000);
      const writesBeforeThaw = server.writes.length;
      server.thaw();
      const thawedAt = clock.now();
      await clock.until(
        () => server.writes.length > writesBeforeThaw,
        'a renewal after the thaw',
        5_000,
      );
      expect(clock.now() - thawedAt).toBe(0); // the renewal waiting in the frozen server, or the next, lands at once

      await clock.advance(60_000);
      expect(a.elector.isLeader).toBe(true);
      expect(a.finished()).toBe(false);
      expect(log).toEqual(['a started']);
      expect(server.lease()!.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 0 });
    },
  );

  test('on the default timings, a leader frozen out past its renew deadline steps down before a standby may take over', async () => {
    const a = start('a', DEFAULT_TIMINGS);
    await clock.until(() => a.elector.isLeader, 'a to lead');
    const b = start('b', DEFAULT_TIMINGS);
    await clock.advance(5_000); // b has seen a's renewals
    server.freeze();
    const frozenAt = clock.now();
    let stoppedAt: number | undefined;
    let tookOverAt: number | undefined;
    while (tookOverAt === undefined) {
      await clock.advance(100);
      if (clock.now() - frozenAt === 25_000) server.thaw();
      expect(a.elector.isLeader && b.elector.isLeader).toBe(false);
      if (stoppedAt === undefined && log.includes('a stopped')) stoppedAt = clock.now();
      if (b.elector.isLeader) tookOverAt = clock.now();
      if (clock.now() - frozenAt > 120_000)
        throw new Error('b did not take over within 120 s of the freeze');
    }
    expect(log).toEqual(['a started', 'a stopped', 'b started']);
    // a gave up within its 20 s renew deadline, during the freeze; b waited out the 30 s lease after the thaw.
    expect(stoppedAt! - frozenAt).toBeLessThanOrEqual(20_000);
    expect(tookOverAt - stoppedAt!).toBeGreaterThanOrEqual(10_000);
    expect(server.lease()!.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  test('a leader that finds the Lease taken by another replica stops leading at once', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    await clock.advance(2 * RETRY_MS);
    // Someone else writes the Lease: a's cached resourceVersion no longer matches, and the fresh read shows "intruder".
    const spec = server.lease()!.spec!;
    server.put({ ...spec, holderIdentity: 'intruder', renewTime: formatMicroTime(clock.now()) });
    const takenAt = clock.now();
    await clock.until(a.finished, "a's run() to resolve");
    expect(clock.now() - takenAt).toBeLessThan(3 * RETRY_MS);
    expect(log).toEqual(['a started', 'a stopped']);
    expect(server.lease()!.spec?.holderIdentity).toBe('intruder');
  });

  test('stop() releases the Lease, so another replica takes over within about two retry periods', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    const b = start('b');
    await clock.advance(3 * RETRY_MS);

    await a.elector.stop();
    const releasedAt = clock.now();
    expect(a.elector.isLeader).toBe(false);
    expect(log).toEqual(['a started', 'a stopped']);
    const release = server.writes.at(-1)!;
    expect(release.by).toBe('a');
    expect(release.spec).toMatchObject({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      leaseTransitions: 0,
    });
    expect(release.spec.renewTime).toMatch(MICRO_TIME);

    await clock.until(() => b.elector.isLeader, 'b to take over', 5_000);
    expect(clock.now() - releasedAt).toBeLessThan(2 * RETRY_MS + 150);
    expect(log).toEqual(['a started', 'a stopped', 'b started']);
    expect(server.lease()!.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await clock.until(a.finished, "a's run() to resolve");
  });

  test('stop({ release: false }) leaves the Lease to expire, as a crashed replica would', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    const b = start('b');
    await clock.advance(3 * RETRY_MS);

    const writes = server.writes.length;
    await a.elector.stop({ release: false });
    const stoppedAt = clock.now();
    expect(log).toEqual(['a started', 'a stopped']);
    expect(server.writes.slice(writes).every((w) => w.spec.holderIdentity === 'a')).toBe(true);
    expect(server.lease()!.spec?.holderIdentity).toBe('a');

    await clock.until(() => b.elector.isLeader, 'b to take over', 5_000);
    expect(clock.now() - stoppedAt).toBeGreaterThanOrEqual(LEASE_MS - 2 * RETRY_MS);
    expect(clock.now() - stoppedAt).toBeLessThan(LEASE_MS + 10 * RETRY_MS);
  });

  test('a standby tries to acquire just after the Lease it saw expires, not at its next poll', async () => {
    // b polls every 1 450 ms; the Lease it first sees at 0 expires at 2 000 ms, so its waits are
    // 1 450 then 551 (taking over at 2 001 ms), not 1 450 then 1 450 (at 2 900 ms).
    const timings = { leaseDurationMs: 2_000, renewDeadlineMs: 1_800, retryPeriodMs: 1_450 };
    const a = start('a', timings);
    await clock.until(() => a.elector.isLeader, 'a to lead');
    await a.elector.stop({ release: false }); // as if killed: the Lease stays a's until it expires

    const waits: number[] = [];
    const startedAt = clock.now(); // b first reads the Lease as it starts, and judges expiry from then
    const b = start('b', {
      ...timings,
      clock: {
        ...clock,
        sleep: (ms, signal) => {
          if (ms !== attemptTimeoutMs(timings.renewDeadlineMs)) waits.push(ms); // not the deadlines of its requests
          return clock.sleep(ms, signal);
        },
      },
    });
    await clock.until(() => b.elector.isLeader, 'b to take over');

    expect(waits.slice(0, 2)).toEqual([1_450, 551]);
    expect(clock.now() - startedAt).toBe(2_001);
    expect(server.lease()!.spec).toMatchObject({
      holderIdentity: 'b',
      leaseTransitions: 1,
      acquireTime: formatMicroTime(startedAt + 2_001),
    });
  });

  test('a standby says who leads, once, and again only when the leader changes', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    const logs = new LogCapture();
    const b = start('b', { logger: logs.logger });
    await clock.advance(3 * LEASE_MS); // many attempts, all finding the Lease renewed by a

    expect(b.elector.isLeader).toBe(false);
    const standing = logs.containing('standing by');
    expect(standing.map((line) => line.msg)).toEqual([
      `standing by, leader is a (Lease ${NAMESPACE}/${NAME})`,
    ]);
    expect(standing[0]).toMatchObject({
      level: 30,
      holder: 'a',
      replica: 'b',
      lease: `${NAMESPACE}/${NAME}`,
    });

    // Another replica takes the Lease over from a (a stops leading when its renewal finds it taken).
    server.put({
      ...server.lease()!.spec!,
      holderIdentity: 'c',
      renewTime: formatMicroTime(clock.now()),
    });
    await clock.advance(2 * RETRY_MS);
    expect(logs.containing('standing by').map((line) => line.msg)).toEqual([
      `standing by, leader is a (Lease ${NAMESPACE}/${NAME})`,
      `standing by, leader is c (Lease ${NAMESPACE}/${NAME})`,
    ]);
  });

  test('a standby that takes over says from whom; a replica that finds the Lease free says it acquired it', async () => {
    const first = new LogCapture();
    const a = start('a', { logger: first.logger });
    await clock.until(() => a.elector.isLeader, 'a to lead');
    expect(first.containing('leading').map((line) => line.msg)).toEqual([
      `acquired the Lease ${NAMESPACE}/${NAME}: leading`,
    ]);

    const second = new LogCapture();
    const b = start('b', { logger: second.logger });
    await clock.advance(2 * RETRY_MS);
    await a.elector.stop();
    await clock.until(() => b.elector.isLeader, 'b to take over');
    const takeover = second.containing('leading');
    expect(takeover.map((line) => line.msg)).toEqual([
      `took over the Lease ${NAMESPACE}/${NAME} from a: leading`,
    ]);
    expect(takeover[0]).toMatchObject({ level: 30, previousHolder: 'a' });
  });

  test('stop() before leading resolves run() without calling back', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    const b = start('b');
    await clock.advance(2 * RETRY_MS);
    await b.elector.stop();
    await clock.until(b.finished, "b's run() to resolve");
    expect(log).toEqual(['a started']);
    expect(server.lease()!.spec?.holderIdentity).toBe('a');
  });

  test('API errors are retried every retry period, never thrown out of run()', async () => {
    const a = start('a');
    a.api.mode = 'fail';
    await clock.advance(4 * RETRY_MS);
    expect(a.elector.isLeader).toBe(false);
    a.api.mode = 'ok';
    await clock.until(() => a.elector.isLeader, 'a to lead once the API answers', 5_000);
    await a.elector.stop();
    await expect(a.done).resolves.toBeUndefined();
  });

  test('a leader whose onStartedLeading fails steps down and releases the Lease', async () => {
    const api = server.client('a');
    const elector = new LeaderElector({
      client: api.client,
      namespace: NAMESPACE,
      name: NAME,
      identity: 'a',
      leaseDurationMs: LEASE_MS,
      renewDeadlineMs: RENEW_MS,
      retryPeriodMs: RETRY_MS,
    });
    electors.push(elector);
    let stopped = 0;
    await elector.run({
      onStartedLeading: () => Promise.reject(new Error('cannot start')),
      onStoppedLeading: () => void stopped++,
    });
    expect(stopped).toBe(1);
    expect(elector.isLeader).toBe(false);
    expect(server.lease()!.spec?.holderIdentity).toBe('');
  });

  test('writes MicroTimes with exactly six fractional digits', async () => {
    const at = Date.UTC(2026, 10, 22, 12, 0, 0, 123);
    const a = start('a', { clock: { ...clock, now: () => at } });
    await clock.until(() => a.elector.isLeader, 'a to lead');
    expect(server.lease()!.spec).toMatchObject({
      acquireTime: '2026-11-22T12:00:00.123000Z',
      renewTime: '2026-11-22T12:00:00.123000Z',
    });

    expect(formatMicroTime(Date.UTC(2026, 10, 22, 12, 0, 0, 0))).toBe(
      '2026-11-22T12:00:00.000000Z',
    );
    expect(formatMicroTime(Date.UTC(2026, 0, 2, 3, 4, 5, 7) + 0.25)).toBe(
      '2026-01-02T03:04:05.007250Z',
    );
  });

  test('every time written during a hand-over is a six-digit MicroTime', async () => {
    const a = start('a');
    await clock.until(() => a.elector.isLeader, 'a to lead');
    const b = start('b');
    await a.elector.stop();
    await clock.until(() => b.elector.isLeader, 'b to take over');
    await b.elector.stop();
    expect(server.writes.length).toBeGreaterThanOrEqual(4);
    for (const { spec } of server.writes) {
      expect(spec.acquireTime).toMatch(MICRO_TIME);
      expect(spec.renewTime).toMatch(MICRO_TIME);
    }
  });

  test('rejects inconsistent durations and missing names', () => {
    const client = server.client('x').client;
    const make = (options: Partial<LeaderElectionOptions>) => () =>
      new LeaderElector({ client, namespace: NAMESPACE, name: NAME, identity: 'x', ...options });
    expect(make({})).not.toThrow(); // the defaults: 30 s > 20 s > 1.2 × 2 s
    expect(make({ leaseDurationMs: 400, renewDeadlineMs: 400, retryPeriodMs: 100 })).toThrow(
      /leaseDurationMs \(400\) must be greater than renewDeadlineMs \(400\)/,
    );
    expect(make({ leaseDurationMs: 600, renewDeadlineMs: 120, retryPeriodMs: 100 })).toThrow(
      /renewDeadlineMs \(120\) must be greater than 1\.2 × retryPeriodMs \(100\)/,
    );
    expect(make({ leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 0 })).toThrow(
      /retryPeriodMs must be a positive number/,
    );
    expect(make({ leaseDurationMs: Number.NaN })).toThrow(
      /leaseDurationMs must be a positive number/,
    );
    expect(make({ identity: '' })).toThrow(/identity must not be empty/);
    expect(make({ namespace: '' })).toThrow(/namespace must not be empty/);
  });

  test('run() twice at once is an error', async () => {
    const a = start('a');
    await expect(a.elector.run(callbacks('a', log))).rejects.toThrow(/already running/);
  });
});
