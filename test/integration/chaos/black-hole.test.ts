import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { Backoff, type BackoffOptions } from '../../../src/framework/clock/backoff.js';
import { runOperator, waitFor, type TestOperator } from '../../../src/testing/index.js';
import { LedgerWidgets } from '../../fixtures/handlers/ledger-widgets.js';
import { readLedger, TrackedChanges, type LedgerVerdict } from '../../support/chaos/ledger.js';
import { chaosStorage, scenarioName } from '../../support/chaos/storage.js';
import { recordChaos } from '../../support/chaos/summary.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { installWidgetCrd, Widgets } from '../../support/widgets.js';
import { FaultProxy } from '../../../src/testing/chaos/index.js';

const OUTAGE_MS = 60_000;
const IDLE_TIMEOUT_MS = 5_000;
/** A 5 s cap (delays settle in [5, 10) s with jitter) keeps recovery after the outage within the time budget. */
const BACKOFF: BackoffOptions = { maxMs: 5_000 };
/** Slack for timers and the 250 ms metrics polling on a busy shared machine. */
const DETECTION_MARGIN_MS = 3_000;
const STALL_THRESHOLD_MS = 15_000;

/**
 * Watch requests the operator can start during a black hole of `windowMs`: each attempt waits out the
 * idle watchdog, then a backoff delay. `random` 0 gives the shortest delays (the most attempts, with
 * the first stall right at the start), 1 the longest (the fewest, with the first stall a full idle
 * timeout in).
 */
function attemptsWithin(windowMs: number, random: 0 | 1): number {
  const backoff = new Backoff({ ...BACKOFF, random: () => random, now: () => 0 });
  let stall = random === 0 ? 0 : IDLE_TIMEOUT_MS;
  let attempts = 0;
  for (;;) {
    const attempt = stall + backoff.next();
    if (attempt >= windowMs) return attempts;
    attempts += 1;
    stall = attempt + IDLE_TIMEOUT_MS;
  }
}

async function scrape(port: number): Promise<{ reconnects: number; healthz: number }> {
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = metrics.split('\n').find((l) => l.startsWith('konductor_watch_reconnects_total{'));
  const healthz = (await fetch(`http://127.0.0.1:${port}/healthz`)).status;
  return { reconnects: line ? Number(line.split(' ').pop()) : 0, healthz };
}

let kc: KubeConfig;
let scratch: string;
let proxy: FaultProxy | undefined;
let running: TestOperator | undefined;
let stopPolling: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  scratch = mkdtempSync(join(tmpdir(), 'konductor-chaos-blackhole-'));
});

afterAll(async () => {
  await stopPolling();
  await running?.stop();
  await proxy?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('connections black-holed', () => {
  test(
    'for 60 s: the stall is detected within the idle timeout plus a margin, reconnect attempts stay within the backoff schedule (no busy loop), ' +
      'and afterwards every change made during the outage is handled (lost 0, phantom 0, duplicates 0)',
    async () => {
      const namespace = await uniqueNamespace(kc, 'chaos-blackhole');
      const ledger = join(scratch, 'ledger.jsonl');
      process.env.CHAOS_LEDGER = ledger;
      const widgets = new Widgets(kc, namespace); // the test's own writes never pass the proxy
      const changes = new TrackedChanges(ledger, widgets);
      const create = (name: string, size: number): Promise<void> => changes.create(name, size);
      const resize = (name: string, size: number): Promise<void> => changes.resize(name, size);
      const remove = (name: string): Promise<void> => changes.remove(name);
      const verdict = (): LedgerVerdict => changes.verdict();

      for (let i = 0; i < 8; i++) await create(`before-${i}`, i + 1);
      proxy = await FaultProxy.forControlPlane({
        dir: dirname(process.env.KONDUCTOR_TEST_KUBECONFIG!),
        kubeConfig: () => kc,
      });
      running = await runOperator({
        kubeConfig: proxy.kubeConfig(),
        handlers: [LedgerWidgets],
        storage: chaosStorage(),
        namespaces: [namespace],
        watch: { idleTimeout: IDLE_TIMEOUT_MS / 1000, reconnect: { max: BACKOFF.maxMs! / 1000 } },
        health: { port: 0, host: '127.0.0.1', watchStall: STALL_THRESHOLD_MS / 1000 },
      });
      const port = (await running.operator.serveHealth())!;
      await waitFor(() => verdict().lost.length === 0, {
        what: 'the initial widgets to be handled',
        timeoutMs: 30_000,
      });
      await sleep(1_000); // let the handlers' status writes and their echoes settle
      const before = await scrape(port);
      expect(before.healthz).toBe(200);

      // The outage. A poller samples what a user would look at: the reconnect counter and /healthz.
      proxy.blackhole();
      const outageStart = Date.now();
      const samples: Array<{ at: number; reconnects: number; healthz: number }> = [];
      let polling = true;
      const poller = (async () => {
        while (polling) {
          const sample = await scrape(port).catch(() => undefined);
          if (sample) samples.push({ at: Date.now() - outageStart, ...sample });
          await sleep(250);
        }
      })();
      stopPolling = async () => {
        polling = false;
        await poller;
      };

      // Changes while the operator is cut off, at the start, the middle and the end of the outage.
      for (let i = 0; i < 4; i++) await create(`during-${i}`, 100 + i);
      for (let i = 0; i < 4; i++) await resize(`before-${i}`, 200 + i);
      await remove('before-6');
      await sleep(25_000 - (Date.now() - outageStart));
      await resize('before-0', 300);
      await resize('during-0', 301);
      await create('during-late', 302);
      await remove('before-7');
      await sleep(OUTAGE_MS - 3_000 - (Date.now() - outageStart));
      await resize('before-1', 400);
      await create('during-last', 401);
      expect(readLedger(ledger).filter((e) => e.time >= outageStart)).toEqual([]); // nothing reached the operator
      await sleep(OUTAGE_MS - (Date.now() - outageStart));

      const during = proxy.stats().byMode.blackhole;
      proxy.pass();
      const outageMs = Date.now() - outageStart;
      await stopPolling();

      // Detection: the watchdog replaced the silent watch within its timeout (plus polling and timer slack).
      const detected = samples.find((s) => s.reconnects > before.reconnects);
      expect(detected).toBeDefined();
      const detectionMs = detected!.at;
      expect(detectionMs).toBeLessThanOrEqual(IDLE_TIMEOUT_MS + DETECTION_MARGIN_MS);
      // ... and liveness reported the silence once it exceeded the stall threshold (counted from the
      // last answer, which came shortly before the outage).
      const unhealthy = samples.find((s) => s.healthz === 503);
      expect(unhealthy).toBeDefined();
      expect(unhealthy!.at).toBeGreaterThanOrEqual(STALL_THRESHOLD_MS - 3_000);
      expect(unhealthy!.at).toBeLessThanOrEqual(STALL_THRESHOLD_MS + DETECTION_MARGIN_MS);

      // No busy loop: every new watch attempt shows up at the proxy as a new connection (its TLS
      // handshake never completes) or as a request on a kept-alive one, and their number stays
      // within what the idle timeout plus backoff allow in the outage.
      const attempts = during.connections + during.requests;
      const maxAttempts = attemptsWithin(outageMs, 0);
      const minAttempts = attemptsWithin(outageMs, 1);
      expect(attempts).toBeLessThanOrEqual(maxAttempts);
      expect(attempts).toBeGreaterThanOrEqual(minAttempts - 1);
      const stalls = samples[samples.length - 1]!.reconnects - before.reconnects;
      expect(stalls).toBeLessThanOrEqual(maxAttempts + 1);

      // Recovery: every change made during the outage is handled, at its latest state, exactly once.
      const recoveryStart = Date.now();
      await waitFor(() => verdict().lost.length === 0, {
        what: 'every change made during the outage to be handled',
        timeoutMs: 30_000,
      });
      const recoveryMs = Date.now() - recoveryStart;
      await sleep(1_000); // room for a duplicate or a late phantom to show up
      const final = verdict();
      expect(final.lost).toEqual([]);
      expect(final.phantom).toEqual([]);
      expect(final.duplicates).toBe(0);
      await waitFor(async () => (await scrape(port)).healthz === 200, {
        what: '/healthz to recover',
        timeoutMs: 10_000,
      });

      console.log(
        `black hole ${Math.round(outageMs / 1000)} s: detected after ${detectionMs} ms (limit ${IDLE_TIMEOUT_MS + DETECTION_MARGIN_MS}), ` +
          `/healthz 503 after ${unhealthy?.at} ms; attempts ${attempts} (${during.connections} connections + ${during.requests} requests on open ones; ` +
          `schedule allows ${minAttempts}–${maxAttempts}), watchdog reconnects ${stalls}; caught up ${recoveryMs} ms after the outage; ` +
          `changes ${final.changesMade}, handled ${final.changesHandled}`,
      );
      recordChaos({
        scenario: scenarioName('black-hole-60s', chaosStorage()),
        faults: 1,
        changesMade: final.changesMade,
        changesHandled: final.changesHandled,
        lost: final.lost.length,
        duplicates: final.duplicates,
      });
    },
    150_000,
  );
});
