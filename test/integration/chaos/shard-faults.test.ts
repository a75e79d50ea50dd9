import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { waitFor } from '../../../src/testing/index.js';
import { FaultProxy } from '../../../src/testing/chaos/index.js';
import { checkLedger, concurrentRuns, readLedger } from '../../support/chaos/ledger.js';
import {
  ChaosRandom,
  judgeDuplicates,
  LedgerOperator,
  LedgerWorkload,
  RecordingWatch,
  type ChaosLeaderElection,
  type LedgerOperatorOptions,
} from '../../support/chaos/operator-process.js';
import { chaosStorage, scenarioName } from '../../support/chaos/storage.js';
import { recordChaos } from '../../support/chaos/summary.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { installWidgetCrd, readWidget, Widgets } from '../../support/widgets.js';

/** Kills in the kill scenario, and the time between them (a longer run: `CHAOS_SHARD_KILLS=10 CHAOS_SHARD_KILL_EVERY_MS=30000`). */
const KILLS = Number(process.env.CHAOS_SHARD_KILLS) || 4;
const KILL_EVERY_MS = Number(process.env.CHAOS_SHARD_KILL_EVERY_MS) || 8_000;
const REPLICAS = 3;

let kc: KubeConfig;
let scratch: string;
const replicas: LedgerOperator[] = [];
let recordings: RecordingWatch | undefined;
let proxy: FaultProxy | undefined;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  scratch = mkdtempSync(join(tmpdir(), 'konductor-chaos-shards-'));
});

afterEach(async () => {
  recordings?.stop();
  for (const replica of replicas.splice(0)) await replica.kill();
  await proxy?.stop();
  proxy = undefined;
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** One scenario's fleet: its namespace, ledger, replicas' options and the changes it makes. */
interface Fleet {
  namespace: string;
  ledger: string;
  widgets: Widgets;
  workload: LedgerWorkload;
  options: LedgerOperatorOptions;
  random: ChaosRandom;
  context: string;
}

async function fleet(name: string): Promise<Fleet> {
  const random = new ChaosRandom();
  const namespace = await uniqueNamespace(kc, name);
  const ledger = join(scratch, `${name}.jsonl`);
  recordings = await RecordingWatch.start(kc, namespace);
  // The renew deadline stays well below the lease duration: a replica cut off stops before its heirs start.
  const leaderElection: ChaosLeaderElection = {
    namespace,
    name: 'chaos-shards',
    leaseDuration: 5,
    renewDeadline: 3,
    retryPeriod: 0.5,
  };
  return {
    namespace,
    ledger,
    widgets: new Widgets(kc, namespace),
    workload: new LedgerWorkload(ledger, random),
    options: {
      kubeconfig: process.env.KONDUCTOR_TEST_KUBECONFIG!,
      namespace,
      ledger,
      handlerMs: 100,
      leaderElection,
      sharding: true,
      logLevel: 'debug',
    },
    random,
    context: `(seed ${random.seed}; replay with CHAOS_SEED=${random.seed})`,
  };
}

async function joined(replica: LedgerOperator, context: string): Promise<void> {
  await waitFor(
    () => {
      if (!replica.alive)
        throw new Error(`a replica exited before it joined ${context}:\n${replica.tail()}`);
      return replica.joined;
    },
    { what: `replica pid ${replica.pid} to join the ring ${context}`, timeoutMs: 30_000 },
  );
}

/** SIGTERM: the replica drains, releases its Lease and exits 0 within the grace period, or the spec fails with its last lines. */
async function stoppedGracefully(replica: LedgerOperator, context: string): Promise<void> {
  const pid = replica.pid;
  const exit = await replica.stop();
  if (exit !== 0)
    throw new Error(
      `replica pid ${pid} did not stop on SIGTERM (${exit}) ${context}:\n${replica.tail(40)}`,
    );
}

/** Creates a widget every 150 ms, resizes an earlier one every other step and deletes one every seventh, until stopped. */
function stream(f: Fleet): { stop: () => Promise<number> } {
  let writing = true;
  let steps = 0;
  const done = (async () => {
    for (let i = 0; writing; i++) {
      const name = await f.workload.create(f.widgets);
      if (i % 2 === 1) {
        const live = f.workload.live().filter((other) => other !== name);
        await f.workload.resize(f.widgets, live[f.random.int(0, live.length - 1)]!);
      }
      // Only an object whose latest size was handled: a deletion supersedes a change not yet handled.
      const handled = i % 7 === 6 ? f.workload.handled() : [];
      if (handled.length > 0) await f.workload.remove(f.widgets, handled[0]!);
      steps = i + 1;
      await sleep(150);
    }
  })();
  return {
    stop: async () => {
      writing = false;
      await done;
      return steps;
    },
  };
}

/** The sharding log lines that tell who held what when: joins, departures, rebalances, lost Leases. */
const RING_EVENTS =
  /joined the sharding ring|left the ring|rebalanced|placed departed|with its heirs|lost leadership|could not/;

/** For a failure message: each object still waiting or lost, its metadata, status, ledger lines and the replicas' lines about it. */
async function stuck(f: Fleet, waiting: string[], lost: string[]): Promise<string> {
  const entries = readLedger(f.ledger);
  const about = async (name: string, why: string) => {
    const widget = await readWidget(f.namespace, name);
    const { labels, annotations, resourceVersion } = widget?.metadata ?? {};
    const runs = entries
      .filter((e) => e.name === name)
      .map((e) => `${e.time} pid ${e.pid} ${e.kind} ${e.at} ${e.size}`);
    return [
      `${name} ${why}: sizes ${JSON.stringify(f.workload.expected.get(name)?.sizes)}, now ${widget ? JSON.stringify({ resourceVersion, labels, annotations, status: widget.status }) : 'gone'}`,
      `  ledger: ${runs.join('; ')}`,
      ...replicas.flatMap((r) => r.linesMatching(new RegExp(`"name":"${name}"`), 8)),
    ].join('\n');
  };
  const parts = [
    ...(await Promise.all(waiting.map((name) => about(name, 'waiting')))),
    ...(await Promise.all(lost.map((entry) => about(entry.split(':')[0]!, entry)))),
  ];
  return parts.join('\n');
}

/** Waits until every change is handled, stops the replicas and judges the ledger. */
async function judge(f: Fleet, scenario: string, faults: number): Promise<void> {
  let waiting: string[] = [];
  let lost: string[] = [];
  await waitFor(
    async () => {
      waiting = [];
      for (const object of f.workload.expected.values()) {
        if (object.deleted) continue;
        const widget = await readWidget(f.namespace, object.name);
        if (widget?.status?.handledSize !== object.sizes.at(-1)) waiting.push(object.name);
      }
      lost = checkLedger(readLedger(f.ledger), [...f.workload.expected.values()]).lost;
      return waiting.length === 0 && lost.length === 0;
    },
    {
      what: `every change to be handled ${f.context}`,
      timeoutMs: 60_000,
      intervalMs: 500,
    },
  ).catch(async (error: unknown) => {
    throw new Error(
      `${String(error)}\n${await stuck(f, waiting.slice(0, 3), lost.slice(0, 3))}\n` +
        `ring:\n${replicas.flatMap((r) => r.linesMatching(RING_EVENTS)).join('\n')}`,
    );
  });
  for (const replica of replicas) await replica.stop();
  recordings!.stop();
  const entries = readLedger(f.ledger);
  const verdict = checkLedger(entries, [...f.workload.expected.values()]);
  const overlaps = concurrentRuns(entries, { sameObject: true });
  const duplicates = judgeDuplicates(entries, recordings!);
  recordChaos({
    scenario: scenarioName(scenario, chaosStorage()),
    faults,
    changesMade: verdict.changesMade,
    changesHandled: verdict.changesHandled,
    lost: verdict.lost.length,
    duplicates: duplicates.unjustified.length,
    repeatsAfterKills: verdict.duplicates - duplicates.unjustified.length,
  });
  for (const repeat of duplicates.unjustified.slice(0, 3)) {
    const name = repeat.split(':')[0]!;
    console.log(
      `repeat ${repeat}\n${entries
        .filter((e) => e.name === name)
        .map((e) => `${e.time} pid ${e.pid} ${e.kind} ${e.at} size ${e.size}`)
        .join('\n')}`,
    );
  }
  const workers = new Set(entries.map((e) => e.pid)).size;
  console.log(
    `${scenario}: ${faults} faults, ${f.workload.expected.size} objects / ${verdict.changesMade} changes, ` +
      `${entries.filter((e) => e.at === 'done').length} completed runs by ${workers} processes, ` +
      `runs of one object at once ${overlaps.length}, repeats ${verdict.duplicates} (unjustified ${duplicates.unjustified.length}) ${f.context}`,
  );
  expect(overlaps).toEqual([]);
  expect(verdict.lost).toEqual([]);
  expect(verdict.phantom).toEqual([]);
  expect(verdict.changesHandled).toBe(verdict.changesMade);
  expect(duplicates.unjustified).toEqual([]);
}

describe(`${REPLICAS} sharded replicas handling a changing fleet`, () => {
  test(
    `a replica SIGKILLed every ${KILL_EVERY_MS / 1000} s, ${KILLS} times, and started again: nothing lost, no object run by two replicas at once, no unjustified repeat`,
    async () => {
      const f = await fleet('chaos-shard-kills');
      for (let i = 0; i < REPLICAS; i++) replicas.push(new LedgerOperator(f.options).start());
      for (const replica of replicas) await joined(replica, f.context);
      const writer = stream(f);
      for (let kill = 0; kill < KILLS; kill++) {
        await sleep(KILL_EVERY_MS);
        for (const replica of replicas.filter((r) => !r.alive)) replica.start(); // as a crashed Pod is
        const victim = replicas[f.random.int(0, replicas.length - 1)]!;
        await victim.kill();
        victim.start(); // a new Pod: a new member
      }
      await writer.stop();
      await judge(f, 'shard-kills', KILLS);
    },
    60_000 + KILLS * (KILL_EVERY_MS + 10_000),
  );

  test('a rolling update, one replica at a time (a new one joins, then an old one drains and stops): nothing lost, no object run by two at once', async () => {
    const f = await fleet('chaos-shard-rolling');
    for (let i = 0; i < REPLICAS; i++) replicas.push(new LedgerOperator(f.options).start());
    for (const replica of replicas) await joined(replica, f.context);
    const writer = stream(f);
    for (let step = 0; step < REPLICAS; step++) {
      const next = new LedgerOperator(f.options).start();
      replicas.push(next);
      await joined(next, f.context);
      await sleep(2_000);
      const old = replicas.shift()!;
      expect(await old.stop()).toBe(0);
    }
    await writer.stop();
    await judge(f, 'shard-rolling-update', REPLICAS);
  }, 180_000);

  test('a rolling update switching sharding on, then one switching it off (the coordinator stopped first): nothing lost, no object run by two at once', async () => {
    const f = await fleet('chaos-shard-switch');
    const plain = { ...f.options, sharding: false };
    for (let i = 0; i < 2; i++) replicas.push(new LedgerOperator(plain).start());
    await waitFor(() => replicas.some((replica) => replica.leading), {
      what: `a replica without sharding to lead ${f.context}`,
    });
    const writer = stream(f);
    // Up in the new mode: a standby, waiting for the old mode, or working once the old replicas are gone.
    const up = ['standing by', 'waiting to', 'joined the sharding ring', 'leading: starting work'];
    /** Starts a replica, as a Deployment's rollout does, and waits until it is up. */
    const surge = async (options: LedgerOperatorOptions): Promise<LedgerOperator> => {
      const next = new LedgerOperator(options).start();
      await waitFor(() => next.logs().some(({ msg }) => up.some((m) => msg?.startsWith(m))), {
        what: `the new replica pid ${next.pid} to be up ${f.context}`,
      });
      return next;
    };
    // On: each old replica replaced by a sharded one, then one more.
    for (const old of replicas.splice(0)) {
      replicas.push(await surge(f.options));
      await sleep(2_000);
      await stoppedGracefully(old, f.context);
    }
    replicas.push(await surge(f.options));
    for (const replica of replicas) await joined(replica, f.context);
    await sleep(4_000);
    // Off: the coordinator stopped first each time, so a leader without sharding may take the Lease
    // while sharded replicas still handle their shares.
    const old = replicas.splice(0);
    while (old.length > 0) {
      replicas.push(await surge(plain));
      await sleep(2_000);
      const coordinator = old.findIndex((r) => r.logged('coordinating the sharding ring'));
      const [stopping] = old.splice(Math.max(0, coordinator), 1);
      await stoppedGracefully(stopping!, f.context);
      await sleep(2_000);
    }
    await waitFor(() => replicas.some((replica) => replica.leading), {
      what: `a replica without sharding to lead again ${f.context}`,
    });
    await sleep(4_000);
    await writer.stop();
    await judge(f, 'shard-switch-on-off', 6);
  }, 180_000);

  test('a replica black-holed from the API server for 20 s stops before its heirs take its objects: nothing lost, no object run by two at once', async () => {
    const f = await fleet('chaos-shard-partition');
    proxy = await FaultProxy.forControlPlane({
      dir: dirname(process.env.KONDUCTOR_TEST_KUBECONFIG!),
      kubeConfig: () => kc,
    });
    const proxied = join(scratch, 'proxied-kubeconfig');
    writeFileSync(proxied, proxy.kubeConfig().exportConfig());
    replicas.push(
      new LedgerOperator(f.options).start(),
      new LedgerOperator(f.options).start(),
      new LedgerOperator({ ...f.options, kubeconfig: proxied }).start(),
    );
    for (const replica of replicas) await joined(replica, f.context);
    const writer = stream(f);
    await sleep(4_000);
    const cutOff = replicas[2]!;
    proxy.blackhole();
    // It cannot renew its member Lease: it stops its work and exits, as `konductor run` does.
    await waitFor(() => !cutOff.alive, {
      what: `the cut-off replica to stop ${f.context}`,
      timeoutMs: 20_000,
    });
    await sleep(20_000 - 5_000);
    proxy.pass();
    cutOff.start();
    await joined(cutOff, f.context);
    await sleep(4_000);
    await writer.stop();
    await judge(f, 'shard-partition', 1);
  }, 180_000);
});
