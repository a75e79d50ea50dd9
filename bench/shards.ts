// Scenario "shards": N objects shared out among 1, 2 and 3 replicas of a sharded operator
// (bench/shards-child.mjs, one process each with the Deployment's Node options; 10 s Lease), each
// replica count on its own namespace of N objects, in one run. Reported per replica count: the
// catch-up (from the replicas' start until every object was handled once and every replica's watches
// hold its share), each replica's objects and share, its live heap (in use after full collections),
// peak heap in use and peak RSS, and the largest live heap against the single replica's. With 3
// replicas, one is then SIGKILLed and 100 of its objects (chosen before) are changed at once: the time
// until the others have handled those changes (first, median, last; its Lease must expire first: 10 s,
// then its heirs handle its objects before they are relabelled), until their watches hold all N objects
// again, until they are all relabelled (its Lease removed), and creations handled twice (must be 0).
// An idle replica's live heap is measured first, and the heap ratios are given above it too.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from '../src/framework/api/api-client.js';
import {
  collection,
  createObjects,
  installBenchCrd,
  machine,
  OperatorProcess,
  round2,
  type BenchTarget,
  type Figures,
} from './support.js';

export interface ShardsOptions {
  /** Object counts (each with every replica count). */
  sizes: number[];
  /** Replica counts, e.g. [1, 2, 3]; the first is the baseline of the heap ratio. */
  replicas: number[];
}

interface ShardState {
  objects: number;
  ring: number;
  created: number;
}

function shardOf(replica: OperatorProcess): ShardState {
  return (
    (replica.latest('shard')?.shard as ShardState | undefined) ?? {
      objects: 0,
      ring: 0,
      created: 0,
    }
  );
}

/** Waits until `done` holds, checking every 100 ms, for at most `timeoutMs`; fails when a replica exited. */
async function until(
  done: () => boolean,
  what: string,
  timeoutMs: number,
  replicas: readonly OperatorProcess[],
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`shards: no ${what} within ${timeoutMs} ms`);
    if (replicas.some((replica) => !replica.running))
      throw new Error(`shards: a replica exited before ${what} (it lost its Lease?)`);
    await sleep(100);
  }
}

async function memoryOf(replica: OperatorProcess): Promise<Figures> {
  const asked = Date.now();
  replica.signal('SIGUSR2');
  const message = await replica.messageWhere(
    (m) =>
      (m.memory as { at?: number } | undefined)?.at !== undefined &&
      (m.memory as { at: number }).at >= asked,
    60_000,
    'memory figures',
  );
  return message.memory as Figures;
}

/**
 * One replica count at one size: catch-up, shares and memory; with 3 or more, a kill (`kill: false`
 * skips it). `holding` names the run in its namespace (a single replica holding one replica's share).
 */
async function shardRun(
  target: BenchTarget,
  objects: number,
  count: number,
  { kill = true, holding = '' }: { kill?: boolean; holding?: string } = {},
): Promise<Figures> {
  const namespace = `bench-shards-${objects}-${count}${holding}`;
  await createObjects(target.kubeConfig, namespace, objects);
  const started = Date.now();
  const replicas = Array.from(
    { length: count },
    (_, i) => new OperatorProcess(target, 'shards-child.mjs', [namespace, `replica-${i}`]),
  );
  try {
    const total = (key: keyof ShardState, among = replicas) =>
      among.reduce((sum, replica) => sum + shardOf(replica)[key], 0);
    await until(
      () => total('created') >= objects && total('objects') === objects,
      'catch-up',
      30 * 60_000,
      replicas,
    );
    const catchUpSeconds = (Date.now() - started) / 1000;
    const figures: Figures[] = [];
    for (const [i, replica] of replicas.entries()) {
      const shard = shardOf(replica);
      figures.push({
        replica: i,
        objects: shard.objects,
        share: round2(shard.objects / objects),
        created: shard.created,
        ...(await memoryOf(replica)),
      });
    }
    const line: Figures = {
      scenario: 'shards',
      objects,
      replicas: count,
      catchUpSeconds: round2(catchUpSeconds),
      createdTwice: total('created') - objects,
      perReplica: figures,
      ...machine(),
    };
    if (kill && count >= 3) {
      // Chosen before the kill: a consistent read of one member's share from etcd takes longer than
      // its Lease at 100,000 objects, and would delay the changes the figure times.
      const touched = await objectsOf(target, namespace, 'replica-0-', TOUCHED);
      const killedAt = Date.now();
      replicas[0]!.kill();
      process.stderr.write(`bench: shards: replica 0 killed at ${killedAt}\n`);
      const survivors = replicas.slice(1);
      await touch(target, namespace, touched);
      const handled = () => {
        const names = new Map<string, number>();
        for (const replica of survivors)
          for (const message of replica.all('touched'))
            for (const name of message.touched as string[])
              if (!names.has(name)) names.set(name, message.at as number);
        return names;
      };
      await until(
        () => touched.every((name) => handled().has(name)),
        'handling of the changes to the killed replica’s objects',
        120_000,
        survivors,
      );
      const delays = touched.map((name) => handled().get(name)! - killedAt).sort((a, b) => a - b);
      line.killedReplicaChangesHandledSeconds = {
        changes: touched.length,
        first: round2(delays[0]! / 1000),
        median: round2(delays[Math.floor(delays.length / 2)]! / 1000),
        last: round2(delays[delays.length - 1]! / 1000),
      };
      await until(
        () => total('objects', survivors) === objects,
        'takeover of the killed replica’s objects',
        120_000,
        survivors,
      );
      line.killedReplicaObjectsElsewhereSeconds = round2((Date.now() - killedAt) / 1000);
      // Its heirs handle its objects at once; relabelling them for the heirs takes longer.
      const client = new ApiClient(target.kubeConfig);
      try {
        const leasesOfKilled = async () =>
          (
            await client.request<{ items: Array<{ metadata: { name: string } }> }>(
              'GET',
              `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
            )
          ).items.filter((lease) => lease.metadata.name.includes('-shard-replica-0-')).length;
        const deadline = Date.now() + 600_000;
        while ((await leasesOfKilled()) > 0 && Date.now() < deadline) await sleep(500);
        line.killedReplicaObjectsRelabelledSeconds = round2((Date.now() - killedAt) / 1000);
      } finally {
        client.close();
      }
      // Moving runs no create handler again.
      await sleep(2_000);
      line.createdTwiceAfterKill = total('created') - objects;
    }
    return line;
  } finally {
    for (const replica of replicas) replica.kill();
  }
}

/** Objects of the killed replica changed at once (their `spec.value`), to time their handling elsewhere. */
const TOUCHED = 100;

/**
 * The names of `count` objects of the member whose name starts with `memberPrefix` (read from its
 * Lease), spread over its share.
 */
async function objectsOf(
  target: BenchTarget,
  namespace: string,
  memberPrefix: string,
  count: number,
): Promise<string[]> {
  const client = new ApiClient(target.kubeConfig);
  try {
    const leases = await client.request<{ items: Array<{ metadata: { name: string } }> }>(
      'GET',
      `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`,
    );
    const lease = leases.items.find((l) => l.metadata.name.includes(`-shard-${memberPrefix}`));
    if (!lease) throw new Error(`shards: no member Lease of ${memberPrefix}…`);
    const member = lease.metadata.name.slice(lease.metadata.name.indexOf(memberPrefix));
    // All of them in one read: a sample from the whole share, since an heir lists it in the same
    // order and the first pages reach it first.
    const query = new URLSearchParams({ labelSelector: `konductor.dev/shard=${member}` });
    const objects = await client.request<{ items: Array<{ metadata: { name: string } }> }>(
      'GET',
      `${collection(namespace)}?${query.toString()}`,
    );
    const every = Math.max(1, Math.floor(objects.items.length / count));
    return objects.items
      .filter((_, i) => i % every === 0)
      .slice(0, count)
      .map((object) => object.metadata.name);
  } finally {
    client.close();
  }
}

/** Changes the `spec.value` of the named objects at once. */
async function touch(target: BenchTarget, namespace: string, names: string[]): Promise<void> {
  const client = new ApiClient(target.kubeConfig);
  try {
    await Promise.all(
      names.map((name) =>
        client.request('PATCH', `${collection(namespace)}/${encodeURIComponent(name)}`, {
          body: { spec: { value: 1 } },
          contentType: 'application/merge-patch+json',
        }),
      ),
    );
  } finally {
    client.close();
  }
}

/** The live heap of one replica with no object: what every replica holds whatever its share. */
async function idleLiveHeap(target: BenchTarget): Promise<number> {
  const namespace = 'bench-shards-idle';
  await createObjects(target.kubeConfig, namespace, 0);
  const replica = new OperatorProcess(target, 'shards-child.mjs', [namespace, 'replica-idle']);
  try {
    await replica.messageWhere((m) => m.joined !== undefined, 120_000, 'the idle replica to join');
    await sleep(2_000);
    return (await memoryOf(replica)).liveHeapMb as number;
  } finally {
    replica.kill();
  }
}

/**
 * A single replica holding as many objects as the largest of `count` replicas held: what sharding costs
 * a replica beyond its share (nothing, when the two live heaps are equal), apart from what every active
 * replica holds whatever its share, which no count of replicas divides.
 */
async function againstOneHoldingItsShare(
  target: BenchTarget,
  objects: number,
  count: number,
  line: Figures,
  idle: number,
): Promise<void> {
  const perReplica = line.perReplica as Figures[];
  const largest = perReplica.reduce((a, b) =>
    (a.liveHeapMb as number) >= (b.liveHeapMb as number) ? a : b,
  );
  const share = largest.objects as number;
  const single = await shardRun(target, share, 1, { kill: false, holding: `-of-${objects}` });
  const heap = ((single.perReplica as Figures[])[0]!.liveHeapMb as number) || 1;
  line.oneHoldingLargestShare = {
    objects: share,
    liveHeapMb: heap,
    largestLiveHeapOfIt: round2((largest.liveHeapMb as number) / heap),
    largestLiveHeapAboveIdleOfIt: round2(((largest.liveHeapMb as number) - idle) / (heap - idle)),
  };
}

/**
 * Every size with every replica count, in one run; heap ratios against the first replica count, of
 * the whole live heap and of the part above an idle replica's.
 */
export async function runShards(target: BenchTarget, options: ShardsOptions): Promise<Figures[]> {
  await installBenchCrd(target.kubeConfig);
  const idle = await idleLiveHeap(target);
  process.stderr.write(`bench: shards: an idle replica's live heap: ${idle} MB\n`);
  const lines: Figures[] = [];
  for (const objects of options.sizes) {
    let baseline: number | undefined;
    for (const count of options.replicas) {
      const line = await shardRun(target, objects, count);
      const heaps = (line.perReplica as Figures[]).map((r) => r.liveHeapMb as number);
      baseline ??= Math.max(...heaps);
      line.idleLiveHeapMb = idle;
      line.largestLiveHeapOfBaseline = round2(Math.max(...heaps) / baseline);
      line.largestLiveHeapAboveIdleOfBaseline = round2(
        (Math.max(...heaps) - idle) / (baseline - idle),
      );
      if (count > 1) await againstOneHoldingItsShare(target, objects, count, line, idle);
      process.stderr.write(`bench: shards ${objects}×${count}: ${JSON.stringify(line)}\n`);
      lines.push(line);
    }
  }
  return lines;
}
