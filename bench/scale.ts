// Scenario "scale": N bench objects (50,000 and 100,000 by default) exist before the operator starts; the
// operator (bench/scale-child.mjs, its own process, with the Deployment's Node options and so its heap
// cap) catches up on all of them with the catch-up handler, then takes steady creates at a fixed rate on
// top for a while. It reports peak RSS, heap in use, objects per second and what each watched object
// costs in heap (after full garbage collections: the live set), beside the objects' mean JSON size.
// A plain watch in this process, started with the operator, receives the same stream and says when
// each steady create reached a watch that does nothing (createToWatchMs): the control plane's floor.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from '../src/framework/api/api-client.js';
import {
  benchApiVersion,
  benchResource,
  collection,
  createObjects,
  installBenchCrd,
  latencyFigures,
  machine,
  OperatorProcess,
  PlainWatch,
  round1,
  round2,
  type BenchTarget,
  type Figures,
} from './support.js';

export interface ScaleOptions {
  /** Objects that exist before the operator starts. */
  objects: number;
  /** Steady creates per second once caught up, and for how long. */
  rate: number;
  seconds: number;
  concurrency: number;
  namespace: string;
}

/**
 * Creates `count` objects `s-<i>` at `rate` per second, open loop (a slow answer never delays the next
 * create); returns the achieved rate and when each was sent (Date.now(), also in its spec.sentAt).
 */
async function steadyCreates(
  target: BenchTarget,
  namespace: string,
  rate: number,
  count: number,
): Promise<{ achievedRate: number; sentAt: Map<string, number> }> {
  const client = new ApiClient(target.kubeConfig);
  const path = collection(namespace);
  const inFlight: Promise<unknown>[] = [];
  const sentAt = new Map<string, number>();
  const interval = 1000 / rate;
  const started = performance.now();
  try {
    for (let i = 0; i < count; i++) {
      const wait = started + i * interval - performance.now();
      if (wait >= 1) await sleep(wait);
      const now = Date.now();
      sentAt.set(`s-${i}`, now);
      const body = {
        apiVersion: benchApiVersion,
        kind: benchResource.kind,
        metadata: { name: `s-${i}` },
        spec: { idx: i, sentAt: now },
      };
      inFlight.push(client.request('POST', path, { body }));
    }
    const sendSeconds = (performance.now() - started) / 1000;
    await Promise.all(inFlight);
    return { achievedRate: round1(count / Math.max(sendSeconds, interval / 1000)), sentAt };
  } finally {
    client.close();
  }
}

interface JsonSizes {
  /** Mean JSON size of an object as the API server sends it. */
  meanJsonBytes: number;
  /** Mean JSON size without `metadata.managedFields`, as the operator keeps it. */
  meanStoredJsonBytes: number;
}

/** The mean JSON size of the objects in `namespace`, read page by page (no page is kept). */
async function jsonSizes(target: BenchTarget, namespace: string): Promise<JsonSizes> {
  const client = new ApiClient(target.kubeConfig);
  let count = 0;
  let whole = 0;
  let stored = 0;
  let token: string | undefined;
  try {
    do {
      const page = await client.request<{
        items?: Array<{ metadata?: Record<string, unknown> }>;
        metadata?: { continue?: string };
      }>('GET', collection(namespace), {
        query: { limit: 1_000, continue: token },
      });
      for (const item of page.items ?? []) {
        count += 1;
        whole += JSON.stringify(item).length;
        const { managedFields: _dropped, ...metadata } = item.metadata ?? {};
        stored += JSON.stringify({ ...item, metadata }).length;
      }
      token = page.metadata?.continue || undefined;
    } while (token);
  } finally {
    client.close();
  }
  return {
    meanJsonBytes: Math.round(whole / Math.max(1, count)),
    meanStoredJsonBytes: Math.round(stored / Math.max(1, count)),
  };
}

/** One scale run: catch-up on `objects`, then steady creates; one figures line. */
export async function runScale(target: BenchTarget, options: ScaleOptions): Promise<Figures> {
  const { objects, rate, seconds, concurrency, namespace } = options;
  const steady = Math.max(0, Math.round(rate * seconds));
  await installBenchCrd(target.kubeConfig);
  const setupCreateSeconds = await createObjects(target.kubeConfig, namespace, objects);
  // The floor for the steady phase: a plain watch started with the operator, so it receives the same
  // stream (the listing, then the echoes of every catch-up write) before the steady creates.
  const watch = new PlainWatch(target.kubeConfig, namespace);
  await watch.listed;
  const child = new OperatorProcess(target, 'scale-child.mjs', [
    namespace,
    objects,
    steady,
    concurrency,
  ]);
  let caughtUp: Figures;
  let result: Figures;
  let achievedRate = 0;
  let sentAt = new Map<string, number>();
  try {
    // Generous: slower than 10 objects/s means something is broken, not slow.
    caughtUp = (await child.message('caughtUp', 120_000 + objects * 100)).caughtUp as Figures;
    // On stderr at once: a steady phase that fails (an overloaded machine) must not take these along.
    process.stderr.write(`bench: scale ${objects}: caught up ${JSON.stringify(caughtUp)}\n`);
    if (steady > 0)
      ({ achievedRate, sentAt } = await steadyCreates(target, namespace, rate, steady));
    result = await child.result(120_000 + steady * 100);
  } catch (error) {
    child.kill();
    throw error;
  } finally {
    watch.stop();
  }
  const sizes = await jsonSizes(target, namespace);
  const { handlerMs, cpuSeconds: _cpu, objects: _all, ...end } = result;
  const perObject = Number(end.heapPerObjectBytes);
  return {
    scenario: 'scale',
    objects,
    catchUpSeconds: caughtUp.seconds,
    objectsPerSecond: caughtUp.objectsPerSecond,
    catchUpPeakRssMb: caughtUp.peakRssMb,
    catchUpPeakHeapUsedMb: caughtUp.peakHeapUsedMb,
    caughtUpLiveHeapMb: caughtUp.liveHeapMb,
    caughtUpHeapPerObjectBytes: caughtUp.heapPerObjectBytes,
    steadyRate: rate,
    steadySeconds: seconds,
    achievedRate,
    ...latencyFigures('createToHandlerMs', (handlerMs as number[] | undefined) ?? []),
    // The floor: when the plain watch, behind the same stream of catch-up echoes, received each create.
    ...latencyFigures('createToWatchMs', watch.delays(sentAt)),
    ...end,
    ...sizes,
    // Heap per object as a multiple of its JSON as the operator keeps it.
    heapPerStoredJsonByte: round2(perObject / sizes.meanStoredJsonBytes),
    concurrency,
    setupCreateSeconds: round1(setupCreateSeconds),
    ...machine(),
  };
}
