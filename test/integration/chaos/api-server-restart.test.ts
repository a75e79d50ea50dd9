import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { TestControlPlane, waitFor } from '../../../src/testing/index.js';
import { checkLedger, readLedger } from '../../support/chaos/ledger.js';
import {
  ChaosRandom,
  judgeDuplicates,
  LedgerOperator,
  LedgerWorkload,
  RecordingWatch,
} from '../../support/chaos/operator-process.js';
import { chaosStorage, scenarioName, type Storage } from '../../support/chaos/storage.js';
import { recordChaos } from '../../support/chaos/summary.js';
import { installWidgetCrd, Widgets } from '../../support/widgets.js';
import { type PeerApiServer } from '../../../src/testing/control-plane.js';

const OUTAGES = 2;
/** Outages of the extra run with status storage (every run proves it; one outage keeps its cost down). */
const STATUS_OUTAGES = 1;

// This test kills the API server, so it runs on a control plane of its own.
let plane: TestControlPlane;
let peer: PeerApiServer | undefined;
let scratch: string;
let operator: LedgerOperator | undefined;
let recordings: RecordingWatch | undefined;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'konductor-chaos-api-'));
  plane = await TestControlPlane.start();
}, 60_000);

afterEach(async () => {
  recordings?.stop();
  await operator?.kill();
  await peer?.stop();
  recordings = undefined;
  operator = undefined;
  peer = undefined;
});

afterAll(async () => {
  await plane?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the API server SIGKILLed and restarted mid-watch', () => {
  const storage = chaosStorage();
  test(`${OUTAGES} outages while objects are created, updated and deleted (also through a peer API server during the outage), ${storage} storage: every change handled at its latest state, no run for a state that never existed, no restart of the operator`, async () => {
    await outageScenario(storage, OUTAGES, 'chaos-api');
  }, 150_000);

  test(`with status storage, ${STATUS_OUTAGES} outage: the same, the bookkeeping riding in the handlers' status writes`, async () => {
    await outageScenario('status', STATUS_OUTAGES, 'chaos-api-status');
  }, 120_000);
});

/**
 * Objects created, resized and deleted in `namespace` while the API server is SIGKILLed `outages` times
 * (changes made through a peer API server meanwhile); asserts every change handled at its latest state,
 * no phantom run, no repeat of a recorded run, and one operator process throughout.
 */
async function outageScenario(storage: Storage, outages: number, namespace: string): Promise<void> {
  const random = new ChaosRandom();
  const context = `(seed ${random.seed}; replay with CHAOS_SEED=${random.seed})`;
  const kc = plane.kubeConfig();
  await installWidgetCrd(kc);
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  const ledger = join(scratch, `${namespace}.jsonl`);
  operator = new LedgerOperator({
    kubeconfig: plane.kubeconfigPath,
    namespace,
    ledger,
    handlerMs: 100,
    storage,
  }).start();
  [peer] = await Promise.all([plane.startPeerApiServer(), operator.waitReady(60_000)]);
  const viaPeer = peer.kubeConfig();
  // The test's own view of what the operator recorded goes through the peer, which stays up.
  recordings = await RecordingWatch.start(viaPeer, namespace);

  const workload = new LedgerWorkload(ledger, random);
  const { expected } = workload;
  const viaMain = new Widgets(kc, namespace);
  const throughPeer = new Widgets(viaPeer, namespace);
  const settled = async (): Promise<boolean> =>
    (await workload.unsettled(viaPeer, namespace)).length === 0;
  for (let i = 0; i < 8; i++) await workload.create(viaMain);
  await waitFor(settled, {
    what: `the first objects to be handled ${context}`,
    timeoutMs: 30_000,
    intervalMs: 200,
  });

  const outagesMs: number[] = [];
  const catchUpMs: number[] = [];
  for (let outage = 0; outage < outages; outage++) {
    // Changes the operator is busy with when the server dies: the kill follows the burst's first run start.
    await workload.burst(viaMain, `a run of the burst to start ${context}`);
    await sleep(random.int(0, 100));
    await plane.stopApiServer('SIGKILL');
    const killedAt = Date.now();
    // While the operator's server is down: creates, resizes (some twice) and deletions through the peer.
    const deletions = workload.pick(workload.handled(), 2);
    for (let i = 0; i < 3; i++) await workload.create(throughPeer);
    const resized = workload.pick(
      workload.live().filter((name) => !deletions.includes(name)),
      4,
    );
    for (const name of [...resized, ...resized.slice(0, 2)])
      await workload.resize(throughPeer, name);
    for (const name of deletions) await workload.remove(throughPeer, name);
    await sleep(Math.max(0, 1_000 - (Date.now() - killedAt)));
    await plane.startApiServer();
    const restoredAt = Date.now();
    outagesMs.push(restoredAt - killedAt);
    await waitFor(settled, {
      what: `every change of outage ${outage + 1} to be handled ${context}`,
      timeoutMs: 45_000,
      intervalMs: 200,
    });
    catchUpMs.push(Date.now() - restoredAt);
  }
  // And business as usual after the last restart (a resized object is never deleted before its resize was handled).
  const lastDeletion = workload.pick(workload.handled(), 1);
  const lastResizes = workload.pick(
    workload.live().filter((name) => !lastDeletion.includes(name)),
    2,
  );
  await Promise.all([
    workload.create(viaMain),
    ...lastResizes.map((name) => workload.resize(viaMain, name)),
    ...lastDeletion.map((name) => workload.remove(viaMain, name)),
  ]);
  await waitFor(settled, {
    what: `the changes after the outages to be handled ${context}`,
    timeoutMs: 30_000,
    intervalMs: 200,
  });

  const reconnects = await operator.metric('konductor_watch_reconnects_total');
  const relists = await operator.metric('konductor_watch_relists_total');
  expect(operator.alive).toBe(true);
  expect(await operator.stop()).toBe(0);
  recordings.stop();

  const entries = readLedger(ledger);
  const verdict = checkLedger(entries, [...expected.values()]);
  const duplicates = judgeDuplicates(entries, recordings);
  recordChaos({
    scenario: scenarioName('api-server-restart', storage),
    faults: outages,
    changesMade: verdict.changesMade,
    changesHandled: verdict.changesHandled,
    lost: verdict.lost.length,
    duplicates: verdict.duplicates,
  });
  console.log(
    `${scenarioName('api-server-restart', storage)}: ${outages} SIGKILLs, outages ${JSON.stringify(outagesMs)} ms, caught up ${JSON.stringify(catchUpMs)} ms after each restart, ` +
      `${verdict.changesMade} changes on ${expected.size} objects, ${entries.filter((e) => e.at === 'done').length} completed runs, ` +
      `${reconnects} watch reconnects, ${relists} relists, duplicates ${verdict.duplicates} ${context}`,
  );

  expect(verdict.lost).toEqual([]);
  expect(verdict.phantom).toEqual([]);
  expect(verdict.changesHandled).toBe(verdict.changesMade);
  // One process did all the work: the outages never restarted it.
  expect(new Set(entries.map((e) => e.pid))).toEqual(new Set([operator.pid]));
  // No run repeats a state whose result was already recorded on the object. Runs whose PATCH met the
  // outage do repeat (the framework re-runs the handlers on every retry of a failed write), so the
  // duplicates are counted and reported rather than required to be 0.
  expect(duplicates.unjustified).toEqual([]);
  expect(reconnects).toBeGreaterThanOrEqual(outages);
}
