// Scenarios "steady-load" and "steady-load-naive": an operator process (Konductor's, or the naive
// baseline) watches an empty namespace; once it is ready, objects are created there at a fixed rate,
// open loop (a slow answer never delays the next create), each carrying spec.sentAt (ms since the
// epoch, set just before its POST). The handler records its own start in status.startedAt.
// - create→handler: status.startedAt − spec.sentAt, read from the objects afterwards;
// - answer→handler: status.startedAt − when the create's answer reached the load generator;
// - create→status: from spec.sentAt to the operator's receipt of the API server's answer to the status
//   write (recorded in the operator process).
// - create→watch: when a plain watch in the load generator's process (no handler, no writes) received
//   the object's ADDED event − spec.sentAt: the floor any operator's create→handler sits on, set by the
//   control plane alone.
// Same machine, same clock: Date.now() on both sides.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from '../src/framework/api/api-client.js';
import {
  benchApiVersion,
  benchResource,
  collection,
  createNamespace,
  installBenchCrd,
  latencyFigures,
  listObjects,
  machine,
  measure,
  cpuFigures,
  OperatorProcess,
  PlainWatch,
  round1,
  round2,
  type BenchTarget,
  type Figures,
} from './support.js';

export interface SteadyLoadOptions {
  operator: 'konductor' | 'naive';
  /** Objects created per second. */
  rate: number;
  seconds: number;
  concurrency: number;
  namespace: string;
  /** Konductor only: keep the bookkeeping in status (1 write per create) instead of annotations. */
  storage?: 'status';
}

/** Creates `count` objects at `rate` per second, open loop; returns each POST's round trip (ms) and the achieved rate. */
async function generate(
  target: BenchTarget,
  namespace: string,
  rate: number,
  count: number,
): Promise<{ createMs: number[]; answeredAt: Map<string, number>; achievedRate: number }> {
  const client = new ApiClient(target.kubeConfig);
  const path = collection(namespace);
  const createMs: number[] = [];
  const answeredAt = new Map<string, number>();
  const inFlight: Promise<void>[] = [];
  const interval = 1000 / rate;
  const started = performance.now();
  try {
    for (let i = 0; i < count; i++) {
      const wait = started + i * interval - performance.now();
      if (wait >= 1) await sleep(wait);
      const sentAt = Date.now();
      inFlight.push(
        client
          .request('POST', path, {
            body: {
              apiVersion: benchApiVersion,
              kind: benchResource.kind,
              metadata: { name: `s-${i}` },
              spec: { idx: i, sentAt },
            },
          })
          .then(() => {
            const now = Date.now();
            createMs.push(now - sentAt);
            answeredAt.set(`s-${i}`, now);
          }),
      );
    }
    const sendSeconds = (performance.now() - started) / 1000;
    await Promise.all(inFlight);
    return {
      createMs,
      answeredAt,
      achievedRate: round1(count / Math.max(sendSeconds, interval / 1000)),
    };
  } finally {
    client.close();
  }
}

export async function runSteadyLoad(
  target: BenchTarget,
  options: SteadyLoadOptions,
): Promise<Figures> {
  const { rate, seconds, concurrency, namespace } = options;
  const objects = Math.max(1, Math.round(rate * seconds));
  await installBenchCrd(target.kubeConfig);
  await createNamespace(target.kubeConfig, namespace);
  const naive = options.operator === 'naive';
  const child = new OperatorProcess(
    target,
    naive ? 'naive-child.mjs' : 'konductor-child.mjs',
    [namespace, objects, concurrency],
    {
      loadsFramework: !naive,
      env: options.storage ? { BENCH_STORAGE: options.storage } : {},
    },
  );
  try {
    await child.message('ready', 60_000);
  } catch (error) {
    child.kill();
    throw error;
  }
  // The plain watch, started (and listed) before the load.
  const watch = new PlainWatch(target.kubeConfig, namespace);
  let measured;
  try {
    await watch.listed;
    measured = await measure(target.kubeConfig, async () => {
      const load = await generate(target, namespace, rate, objects);
      return { load, result: await child.result(60_000 + seconds * 2_000) };
    });
  } finally {
    watch.stop();
  }
  const { load, result } = measured.value;
  const watchMs: number[] = [];
  const handlerMs: number[] = [];
  const answerToHandlerMs: number[] = [];
  for (const object of await listObjects(target.kubeConfig, namespace)) {
    const startedAt = object.status?.startedAt;
    const sentAt = object.spec?.sentAt;
    if (typeof startedAt === 'number' && typeof sentAt === 'number')
      handlerMs.push(startedAt - sentAt);
    const watched = watch.arrivals.get(object.metadata?.name ?? '');
    if (typeof sentAt === 'number' && watched !== undefined) watchMs.push(watched - sentAt);
    const answered = load.answeredAt.get(object.metadata?.name ?? '');
    if (typeof startedAt === 'number' && answered !== undefined)
      answerToHandlerMs.push(startedAt - answered);
  }
  if (handlerMs.length !== objects)
    throw new Error(`steady load: ${handlerMs.length} of ${objects} objects show status.startedAt`);
  return {
    scenario: naive
      ? 'steady-load-naive'
      : options.storage === 'status'
        ? 'steady-load-status'
        : 'steady-load',
    objects,
    rate,
    seconds,
    achievedRate: load.achievedRate,
    ...latencyFigures('createToHandlerMs', handlerMs),
    ...latencyFigures('createToStatusMs', result.writtenMs as number[]),
    ...latencyFigures('createRequestMs', load.createMs),
    // From the create's answer reaching the client to the handler's start: the watch's delivery and
    // the operator's share, without the create's own time in the API server (negative: the handler
    // started before the client had read the answer).
    ...latencyFigures('answerToHandlerMs', answerToHandlerMs),
    // The floor: a plain watch's delivery of the same creates (see the header).
    ...latencyFigures('createToWatchMs', watchMs),
    watchedObjects: watchMs.length,
    peakRssMb: result.peakRssMb,
    heapAtPeakMb: result.heapAtPeakMb,
    apiWritesPerObject: round2(measured.patches / objects),
    // The operator was idle between its ready message and the start of the measured stretch.
    ...cpuFigures(
      measured,
      round1(
        ((Number(result.cpuSeconds) - Number(result.cpuSecondsAtReady)) / measured.seconds) * 100,
      ),
    ),
    concurrency,
    ...machine(),
  };
}

/** Ours against the naive baseline's line: the naive line plus Konductor's figures and ratios. */
export function compareSteady(konductor: Figures, naive: Figures): Figures {
  return {
    ...naive,
    konductorCreateToHandlerMsP99: konductor.createToHandlerMsP99,
    konductorCreateToStatusMsP99: konductor.createToStatusMsP99,
    konductorPeakRssMb: konductor.peakRssMb,
    konductorOperatorCpuPercent: konductor.operatorCpuPercent,
    konductorApiServerCpuPercent: konductor.apiServerCpuPercent,
    // Konductor's p50/p99 create→status and peak RSS as multiples of the naive operator's.
    konductorStatusP50Ratio: round2(
      Number(konductor.createToStatusMsP50) / Number(naive.createToStatusMsP50),
    ),
    konductorStatusP99Ratio: round2(
      Number(konductor.createToStatusMsP99) / Number(naive.createToStatusMsP99),
    ),
    konductorRssRatio: round2(Number(konductor.peakRssMb) / Number(naive.peakRssMb)),
  };
}
