import {
  ReadinessError,
  waitUntilReady,
  type ReadinessAnswer,
} from '../../../src/testing/readiness-wait.js';
import { installFakeClock, type FakeClock } from '../../support/fake-clock.js';

let clock: FakeClock;
beforeEach(() => {
  clock = installFakeClock({ now: '2024-05-01T12:00:00Z' });
});
afterEach(() => clock.uninstall());

/** A readiness probe scripted by time since the wait started. */
function scripted(
  answerAt: (elapsedMs: number) => ReadinessAnswer,
): () => Promise<ReadinessAnswer> {
  const start = clock.now();
  return () => Promise.resolve(answerAt(clock.now() - start));
}

/** Settles `promise` as far as the fake clock allows within `ms`. */
async function outcome(promise: Promise<void>, ms: number): Promise<'ready' | Error | 'waiting'> {
  let result: 'ready' | Error | 'waiting' = 'waiting';
  promise.then(
    () => (result = 'ready'),
    (error: unknown) => (result = error as Error),
  );
  await clock.advanceAsync(ms);
  return result;
}

describe('waitUntilReady', () => {
  test('keeps waiting past the stall window while the log keeps growing, and resolves once ready', async () => {
    let log = 0;
    const waiting = waitUntilReady({
      name: 'kube-apiserver',
      check: scripted((elapsed) => ({
        ready: elapsed >= 90_000,
        seen: 'GET /readyz answered 500',
      })),
      alive: () => true,
      progress: () => (log += 100),
      stallMs: 30_000,
      ceilingMs: 300_000,
      clock,
    });

    expect(await outcome(waiting, 100_000)).toBe('ready');
  });

  test('a new readiness answer counts as progress too', async () => {
    const waiting = waitUntilReady({
      name: 'etcd',
      check: scripted((elapsed) => ({
        ready: elapsed >= 50_000,
        seen: elapsed < 25_000 ? 'connect ECONNREFUSED' : 'GET /health answered 503',
      })),
      alive: () => true,
      stallMs: 30_000,
      ceilingMs: 300_000,
      clock,
    });

    expect(await outcome(waiting, 60_000)).toBe('ready');
  });

  test('without progress for the stall window it fails, naming what the check last saw', async () => {
    const waiting = waitUntilReady({
      name: 'kube-apiserver',
      check: scripted(() => ({ ready: false, seen: 'GET /readyz answered 500' })),
      alive: () => true,
      progress: () => 4096,
      stallMs: 30_000,
      ceilingMs: 300_000,
      clock,
    });

    const result = await outcome(waiting, 31_000);
    expect(result).toBeInstanceOf(ReadinessError);
    expect((result as Error).message).toMatch(
      /kube-apiserver was not ready and made no progress for 30000 ms \(last seen: GET \/readyz answered 500, \d+ ms after the last change; log at 4096 bytes\)/,
    );
  });

  test('a start that keeps progressing fails at the ceiling', async () => {
    let log = 0;
    const waiting = waitUntilReady({
      name: 'kube-apiserver',
      check: scripted(() => ({ ready: false, seen: 'GET /readyz answered 500' })),
      alive: () => true,
      progress: () => (log += 1),
      stallMs: 30_000,
      ceilingMs: 300_000,
      clock,
    });

    expect(await outcome(waiting, 299_000)).toBe('waiting');
    const result = await outcome(waiting, 2_000);
    expect((result as Error).message).toMatch(
      /^kube-apiserver was not ready within 300000 ms although still making progress/,
    );
  });

  test('a program that exits fails the wait at once', async () => {
    let alive = true;
    const waiting = waitUntilReady({
      name: 'etcd',
      check: scripted(() => ({ ready: false, seen: 'connect ECONNREFUSED' })),
      alive: () => alive,
      stallMs: 30_000,
      ceilingMs: 300_000,
      clock,
    });
    alive = false;

    expect(((await outcome(waiting, 200)) as Error).message).toBe(
      'etcd exited during start-up (last seen: connect ECONNREFUSED)',
    );
  });
});
