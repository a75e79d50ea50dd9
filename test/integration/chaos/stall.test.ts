import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import type { BackoffOptions } from '../../../src/framework/clock/backoff.js';
import {
  runOperator,
  TestControlPlane,
  waitFor,
  type TestOperator,
} from '../../../src/testing/index.js';
import { LedgerWidgets } from '../../fixtures/handlers/ledger-widgets.js';
import { readLedger, TrackedChanges, type LedgerVerdict } from '../../support/chaos/ledger.js';
import { chaosStorage, scenarioName } from '../../support/chaos/storage.js';
import { recordChaos } from '../../support/chaos/summary.js';
import { installWidgetCrd, Widgets } from '../../support/widgets.js';
import { type PeerApiServer } from '../../../src/testing/control-plane.js';

const NAMESPACE = 'chaos-stall';
const IDLE_TIMEOUT_MS = 5_000;
/** Three idle timeouts: the watchdog fires, and reconnects to the frozen server stall in turn. */
const STALL_MS = 15_000;
/** Delays settle in [4, 8) s: recovery after the stall stays quick. */
const BACKOFF: BackoffOptions = { maxMs: 4_000 };
const DETECTION_MARGIN_MS = 3_000;

async function reconnects(port: number): Promise<number> {
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = metrics.split('\n').find((l) => l.startsWith('konductor_watch_reconnects_total{'));
  return line ? Number(line.split(' ').pop()) : 0;
}

// SIGSTOP freezes the whole API server, so this scenario runs on a control plane of its own.
let plane: TestControlPlane;
let peer: PeerApiServer | undefined;
let running: TestOperator | undefined;
let scratch: string;

beforeAll(async () => {
  plane = await TestControlPlane.start();
  scratch = mkdtempSync(join(tmpdir(), 'konductor-chaos-stall-'));
});

afterAll(async () => {
  plane.apiServer.signal('SIGCONT');
  await running?.stop();
  await peer?.stop();
  await plane.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the API server stalled', () => {
  test(
    `by SIGSTOP for ${STALL_MS / 1000} s (three idle timeouts) while objects change through a peer API server: the operator notices within the idle timeout ` +
      'plus a margin, keeps reconnecting with backoff, and after SIGCONT catches up on every change (lost 0, phantom 0, duplicates 0)',
    async () => {
      const kc = plane.kubeConfig();
      await installWidgetCrd(kc);
      await kc
        .makeApiClient(CoreV1Api)
        .createNamespace({ body: { metadata: { name: NAMESPACE } } });
      const ledger = join(scratch, 'ledger.jsonl');
      process.env.CHAOS_LEDGER = ledger;
      // Started before the stall, so the stall is not spent waiting for it: the same etcd, another port.
      peer = await plane.startPeerApiServer();
      const direct = new Widgets(kc, NAMESPACE);
      const viaPeer = new Widgets(peer.kubeConfig(), NAMESPACE);
      const changes = new TrackedChanges(ledger, viaPeer);
      const create = (widgets: Widgets, name: string, size: number): Promise<void> =>
        changes.create(name, size, widgets);
      const resize = (name: string, size: number): Promise<void> => changes.resize(name, size);
      const remove = (name: string): Promise<void> => changes.remove(name);
      const verdict = (): LedgerVerdict => changes.verdict();

      for (let i = 0; i < 6; i++) await create(direct, `before-${i}`, i + 1);
      running = await runOperator({
        kubeConfig: kc,
        handlers: [LedgerWidgets],
        storage: chaosStorage(),
        namespaces: [NAMESPACE],
        watch: { idleTimeout: IDLE_TIMEOUT_MS / 1000, reconnect: { max: BACKOFF.maxMs! / 1000 } },
        health: { port: 0, host: '127.0.0.1' },
      });
      const port = (await running.operator.serveHealth())!;
      await waitFor(() => verdict().lost.length === 0, {
        what: 'the initial widgets to be handled',
        timeoutMs: 30_000,
      });
      await sleep(1_000); // let the handlers' status writes and their echoes settle
      const before = await reconnects(port);

      const samples: Array<{ at: number; reconnects: number }> = [];
      plane.apiServer.signal('SIGSTOP');
      const stallStart = Date.now();
      let resumedAt: number;
      try {
        let polling = true;
        const poller = (async () => {
          while (polling) {
            const value = await reconnects(port).catch(() => undefined);
            if (value !== undefined)
              samples.push({ at: Date.now() - stallStart, reconnects: value });
            await sleep(250);
          }
        })();
        try {
          for (let i = 0; i < 3; i++) await create(viaPeer, `during-${i}`, 100 + i);
          for (let i = 0; i < 3; i++) await resize(`before-${i}`, 200 + i);
          await remove('before-5');
          await sleep(STALL_MS / 2 - (Date.now() - stallStart));
          await resize('before-0', 300);
          await resize('during-0', 301);
          await create(viaPeer, 'during-late', 302);
          await remove('before-4');
          await sleep(STALL_MS - (Date.now() - stallStart));
          expect(readLedger(ledger).filter((e) => e.time >= stallStart)).toEqual([]); // nothing got through
        } finally {
          polling = false;
          await poller;
        }
      } finally {
        plane.apiServer.signal('SIGCONT');
        resumedAt = Date.now();
      }
      const stallMs = resumedAt - stallStart;

      // Noticed: the watchdog replaced the frozen watch within its timeout, then kept retrying.
      const detected = samples.find((s) => s.reconnects > before);
      expect(detected).toBeDefined();
      expect(detected!.at).toBeLessThanOrEqual(IDLE_TIMEOUT_MS + DETECTION_MARGIN_MS);
      const stalls = samples[samples.length - 1]!.reconnects - before;
      // At most one watchdog firing per idle timeout (backoff only spaces them further); at least two.
      expect(stalls).toBeGreaterThanOrEqual(2);
      expect(stalls).toBeLessThanOrEqual(Math.ceil(stallMs / IDLE_TIMEOUT_MS));

      // Caught up: every change made through the peer is handled, once, at its latest state.
      await waitFor(() => verdict().lost.length === 0, {
        what: 'every change made during the stall to be handled',
        timeoutMs: 40_000,
      });
      const recoveryMs = Date.now() - resumedAt;
      await sleep(1_000); // room for a duplicate or a late phantom to show up
      const final = verdict();
      expect(final.lost).toEqual([]);
      expect(final.phantom).toEqual([]);
      expect(final.duplicates).toBe(0);

      console.log(
        `API server SIGSTOPped ${Math.round(stallMs / 1000)} s: detected after ${detected!.at} ms (limit ${IDLE_TIMEOUT_MS + DETECTION_MARGIN_MS}), ` +
          `watchdog reconnects ${stalls}; caught up ${recoveryMs} ms after SIGCONT; changes ${final.changesMade}, handled ${final.changesHandled}`,
      );
      recordChaos({
        scenario: scenarioName('api-server-sigstop-15s', chaosStorage()),
        faults: 1,
        changesMade: final.changesMade,
        changesHandled: final.changesHandled,
        lost: final.lost.length,
        duplicates: final.duplicates,
      });
    },
    120_000,
  );
});
