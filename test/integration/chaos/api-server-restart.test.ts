import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { TestControlPlane, waitFor, type PeerApiServer } from '../../../src/testing/index.js';
import { checkLedger, readLedger } from '../../support/chaos/ledger.js';
import { ChaosRandom, judgeDuplicates, LedgerOperator, LedgerWorkload, RecordingWatch } from '../../support/chaos/operator-process.js';
import { recordChaos } from '../../support/chaos/summary.js';
import { installWidgetCrd, Widgets } from '../../support/widgets.js';

const OUTAGES = 2;
const NAMESPACE = 'chaos-api';

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

afterAll(async () => {
  recordings?.stop();
  await operator?.kill();
  await peer?.stop();
  await plane?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('the API server SIGKILLed and restarted mid-watch', () => {
  test(`${OUTAGES} outages while objects are created, updated and deleted (also through a peer API server during the outage): every change handled at its latest state, no run for a state that never existed, no restart of the operator`, async () => {
    const random = new ChaosRandom();
    const context = `(seed ${random.seed}; replay with CHAOS_SEED=${random.seed})`;
    const kc = plane.kubeConfig();
    await installWidgetCrd(kc);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
    const ledger = join(scratch, 'ledger.jsonl');
    operator = new LedgerOperator({ kubeconfig: plane.kubeconfigPath, namespace: NAMESPACE, ledger, handlerMs: 100 }).start();
    [peer] = await Promise.all([plane.startPeerApiServer(), operator.waitReady(60_000)]);
    const viaPeer = peer.kubeConfig();
    // The test's own view of what the operator recorded goes through the peer, which stays up.
    recordings = await RecordingWatch.start(viaPeer, NAMESPACE);

    const workload = new LedgerWorkload(ledger, random);
    const { expected } = workload;
    const viaMain = new Widgets(kc, NAMESPACE);
    const throughPeer = new Widgets(viaPeer, NAMESPACE);
    const settled = async (): Promise<boolean> => (await workload.unsettled(viaPeer, NAMESPACE)).length === 0;
    for (let i = 0; i < 8; i++) await workload.create(viaMain);
    await waitFor(settled, { what: `the first objects to be handled ${context}`, timeoutMs: 30_000, intervalMs: 200 });

    const outagesMs: number[] = [];
    const catchUpMs: number[] = [];
    for (let outage = 0; outage < OUTAGES; outage++) {
      // Changes the operator is busy with when the server dies: the kill follows the burst's first run start.
      await workload.burst(viaMain, `a run of the burst to start ${context}`);
      await sleep(random.int(0, 100));
      await plane.stopApiServer('SIGKILL');
      const killedAt = Date.now();
      // While the operator's server is down: creates, resizes (some twice) and deletions through the peer.
      const deletions = workload.pick(workload.handled(), 2);
      for (let i = 0; i < 3; i++) await workload.create(throughPeer);
      const resized = workload.pick(workload.live().filter((name) => !deletions.includes(name)), 4);
      for (const name of [...resized, ...resized.slice(0, 2)]) await workload.resize(throughPeer, name);
      for (const name of deletions) await workload.remove(throughPeer, name);
      await sleep(Math.max(0, 1_000 - (Date.now() - killedAt)));
      await plane.startApiServer();
      const restoredAt = Date.now();
      outagesMs.push(restoredAt - killedAt);
      await waitFor(settled, { what: `every change of outage ${outage + 1} to be handled ${context}`, timeoutMs: 45_000, intervalMs: 200 });
      catchUpMs.push(Date.now() - restoredAt);
    }
    // And business as usual after the last restart (a resized object is never deleted before its resize was handled).
    const lastDeletion = workload.pick(workload.handled(), 1);
    const lastResizes = workload.pick(workload.live().filter((name) => !lastDeletion.includes(name)), 2);
    await Promise.all([
      workload.create(viaMain),
      ...lastResizes.map((name) => workload.resize(viaMain, name)),
      ...lastDeletion.map((name) => workload.remove(viaMain, name)),
    ]);
    await waitFor(settled, { what: `the changes after the outages to be handled ${context}`, timeoutMs: 30_000, intervalMs: 200 });

    const reconnects = await operator.metric('konductor_watch_reconnects_total');
    const relists = await operator.metric('konductor_watch_relists_total');
    expect(operator.alive).toBe(true);
    expect(await operator.stop()).toBe(0);
    recordings.stop();

    const entries = readLedger(ledger);
    const verdict = checkLedger(entries, [...expected.values()]);
    const duplicates = judgeDuplicates(entries, recordings);
    recordChaos({
      scenario: 'api-server-restart',
      faults: OUTAGES,
      changesMade: verdict.changesMade,
      changesHandled: verdict.changesHandled,
      lost: verdict.lost.length,
      duplicates: verdict.duplicates,
    });
    console.log(
      `api-server-restart: ${OUTAGES} SIGKILLs, outages ${JSON.stringify(outagesMs)} ms, caught up ${JSON.stringify(catchUpMs)} ms after each restart, ` +
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
    expect(reconnects).toBeGreaterThanOrEqual(OUTAGES);
  }, 150_000);
});
