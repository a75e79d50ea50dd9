import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { TestControlPlane, waitFor } from '../../../src/testing/index.js';
import { checkLedger, readLedger } from '../../support/chaos/ledger.js';
import {
  ChaosRandom,
  LedgerOperator,
  LedgerWorkload,
} from '../../support/chaos/operator-process.js';
import { chaosStorage, scenarioName } from '../../support/chaos/storage.js';
import { recordChaos } from '../../support/chaos/summary.js';
import { installWidgetCrd, Widgets } from '../../support/widgets.js';

const OUTAGES = 2;
const OUTAGE_MS = 8_000;
const NAMESPACE = 'chaos-etcd';

// This test kills etcd, so it runs on a control plane of its own. With etcd gone, the API server
// holds requests until its request timeout (60 s by default) before answering 504; a 4 s timeout
// makes the outage answer errors within the test's time budget, as a slow or lost etcd does.
let plane: TestControlPlane;
let scratch: string;
let operator: LedgerOperator | undefined;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'konductor-chaos-etcd-'));
  plane = await TestControlPlane.start({ apiServerArgs: ['--request-timeout=4s'] });
}, 60_000);

afterAll(async () => {
  await operator?.kill();
  await plane?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

interface RetryLine {
  name: string;
  retryInMs: number;
  time: number;
}

describe('etcd SIGKILLed and restarted', () => {
  test(`${OUTAGES} etcd outages of ${OUTAGE_MS / 1000} s while objects change: the API errors are retried with growing delays, nothing is lost, the operator is never restarted`, async () => {
    const random = new ChaosRandom();
    const context = `(seed ${random.seed}; replay with CHAOS_SEED=${random.seed})`;
    const kc = plane.kubeConfig();
    await installWidgetCrd(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
    const ledger = join(scratch, 'ledger.jsonl');
    operator = new LedgerOperator({
      kubeconfig: plane.kubeconfigPath,
      namespace: NAMESPACE,
      ledger,
      handlerMs: 300,
    }).start();
    await operator.waitReady(60_000);

    // Writes are retried until the API server takes them, so changes can be made during the outage.
    const workload = new LedgerWorkload(ledger, random, { persist: true });
    const { expected } = workload;
    const widgets = new Widgets(kc, NAMESPACE);
    const settled = async (): Promise<boolean> =>
      (await workload.unsettled(kc, NAMESPACE).catch(() => ['?'])).length === 0;
    for (let i = 0; i < 8; i++) await workload.create(widgets);
    await waitFor(settled, {
      what: `the first objects to be handled ${context}`,
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    const reconnectsBefore = await operator.metric('konductor_watch_reconnects_total');

    const outages: Array<{ from: number; to: number }> = [];
    const catchUpMs: number[] = [];
    for (let outage = 0; outage < OUTAGES; outage++) {
      // Changes in flight when etcd dies: etcd goes as soon as their first handler has started, so at
      // least that run's PATCH meets the outage.
      await workload.burst(widgets, `a run of the burst to start ${context}`);
      await sleep(random.int(0, 100));
      await plane.stopEtcd('SIGKILL');
      const from = Date.now();
      // Changes attempted during the outage go through once etcd is back (the writes retry).
      const deletion = workload.pick(workload.handled(), 1);
      const resizes = workload.pick(
        workload.live().filter((name) => !deletion.includes(name)),
        2,
      );
      const during = Promise.all([
        workload.create(widgets),
        ...resizes.map((name) => workload.resize(widgets, name)),
        ...deletion.map((name) => workload.remove(widgets, name)),
      ]);
      await sleep(OUTAGE_MS);
      await plane.startEtcd();
      const to = Date.now();
      outages.push({ from, to });
      await during;
      await waitFor(settled, {
        what: `every change of outage ${outage + 1} to be handled ${context}`,
        timeoutMs: 60_000,
        intervalMs: 250,
      });
      catchUpMs.push(Date.now() - to);
    }

    const reconnects =
      (await operator.metric('konductor_watch_reconnects_total')) - reconnectsBefore;
    const logs = operator.logs();
    expect(operator.alive).toBe(true);
    expect(await operator.stop()).toBe(0);

    const entries = readLedger(ledger);
    const verdict = checkLedger(entries, [...expected.values()]);
    // "processing <ns>/<name> failed; retrying in N s": one line per failed attempt, with its delay.
    const retries: RetryLine[] = logs
      .filter((l) => typeof l.retryInMs === 'number' && typeof l.name === 'string')
      .map((l) => ({
        name: l.name as string,
        retryInMs: l.retryInMs as number,
        time: l.time as number,
      }));
    // Per outage and object, the delays in order (a success in between resets the count).
    const outageOf = (time: number): number => outages.filter((o) => o.from <= time).length - 1;
    const perObject = new Map<string, number[]>();
    for (const line of retries) {
      const key = `${line.name} (outage ${outageOf(line.time) + 1})`;
      perObject.set(key, [...(perObject.get(key) ?? []), line.retryInMs]);
    }
    const outageMs = outages.reduce((total, o) => total + (o.to - o.from), 0);
    recordChaos({
      scenario: scenarioName('etcd-restart', chaosStorage()),
      faults: OUTAGES,
      changesMade: verdict.changesMade,
      changesHandled: verdict.changesHandled,
      lost: verdict.lost.length,
      duplicates: verdict.duplicates,
    });
    console.log(
      `etcd-restart: ${OUTAGES} SIGKILLs, ${outageMs} ms without etcd, caught up ${JSON.stringify(catchUpMs)} ms after each restart, ` +
        `${verdict.changesMade} changes on ${expected.size} objects, ${entries.filter((e) => e.at === 'done').length} completed runs, ` +
        `${retries.length} failed attempts retried (delays per object and outage ${JSON.stringify([...perObject.values()])}), ` +
        `${reconnects} watch reconnects, duplicates ${verdict.duplicates} ${context}`,
    );

    expect(verdict.lost).toEqual([]);
    expect(verdict.phantom).toEqual([]);
    expect(verdict.changesHandled).toBe(verdict.changesMade);
    expect(new Set(entries.map((e) => e.pid))).toEqual(new Set([operator.pid]));
    // The outage was met: some handler results could not be written and were retried...
    expect(retries.length).toBeGreaterThan(0);
    // ...with backoff: per object and outage, the delays double from 1 s (1 s, 2 s, 4 s, ...)...
    for (const [key, delays] of perObject)
      expect({ key, delays }).toEqual({
        key,
        delays: delays.map((_, i) => Math.min(60_000, 1_000 * 2 ** i)),
      });
    // ...and no busy loop: an attempt per object takes at least its delay, so attempts stay few.
    expect(retries.length).toBeLessThanOrEqual(
      perObject.size * Math.ceil(Math.log2(outageMs / 1_000) + 2),
    );
    // The watches reconnected a bounded number of times (a busy loop would be hundreds).
    expect(reconnects).toBeLessThan(20 * OUTAGES);
  }, 150_000);
});
