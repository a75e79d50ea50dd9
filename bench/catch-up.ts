// Scenarios "catch-up", "ceiling" and "catch-up-naive": N bench objects exist before the operator starts;
// a create handler copies spec.idx to status.seen and records when it started. Then, in the same run, a
// plain client with the same concurrency makes the same writes as the framework (status PATCH plus the
// bookkeeping PATCH) with no framework: the ceiling. Finally the naive baseline (bench/naive-child.mjs,
// client-node's informer and a status merge patch) catches up on its own N objects.
// API writes per object are read from the API server's own apiserver_request_total.
import { ApiClient } from '../src/framework/api/api-client.js';
import { collection, createObjects, installBenchCrd, cpuFigures, machine, measure, OperatorProcess, round1, round2, type BenchTarget, type Figures } from './support.js';

export interface CatchUpOptions {
  objects: number;
  concurrency: number;
  /** Also run the naive baseline on its own N objects. */
  naive: boolean;
  /** Namespace prefix (namespaces must be new). */
  prefix?: string;
}

/** The same writes with a plain client: one status PATCH and one bookkeeping PATCH per object. */
async function ceiling(target: BenchTarget, namespace: string, objects: number, concurrency: number): Promise<number> {
  const client = new ApiClient(target.kubeConfig);
  const base = collection(namespace);
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < objects) {
      const i = next++;
      await client.request('PATCH', `${base}/o-${i}/status`, { body: { status: { seen: -1, startedAt: Date.now() } }, contentType: 'application/merge-patch+json' });
      await client.request('PATCH', `${base}/o-${i}`, { body: { metadata: { annotations: { 'bench/ceiling': String(i) } } }, contentType: 'application/merge-patch+json' });
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    client.close();
  }
  return objects / ((performance.now() - started) / 1000);
}

/** One operator process catching up on `objects` objects in `namespace`: its figures, API writes per object, CPU shares. */
async function catchUp(target: BenchTarget, script: string, namespace: string, objects: number, concurrency: number): Promise<Figures> {
  const child = new OperatorProcess(target, script, [namespace, objects, concurrency], { loadsFramework: script !== 'naive-child.mjs' });
  // Generous: a catch-up slower than 10 objects/s means something is broken, not slow.
  const started = performance.now();
  const measured = await measure(target.kubeConfig, () => child.result(60_000 + objects * 100));
  const { writtenMs: _written, cpuSecondsAtReady: _ready, cpuSeconds, ...figures } = measured.value;
  // The process lives through the whole measured stretch (it exits right after its result).
  const operatorCpuPercent = round1((Number(cpuSeconds) / ((performance.now() - started) / 1000)) * 100);
  return { ...figures, apiWritesPerObject: round2(measured.patches / objects), ...cpuFigures(measured, operatorCpuPercent) };
}

/** Runs catch-up (and the ceiling, and optionally the naive baseline); returns one figures line per scenario. */
export async function runCatchUp(target: BenchTarget, options: CatchUpOptions): Promise<Figures[]> {
  const { objects, concurrency } = options;
  const prefix = options.prefix ?? 'bench';
  await installBenchCrd(target.kubeConfig);
  const ours = `${prefix}-catch-up`;
  const naive = `${prefix}-catch-up-naive`;
  // Both sets exist before either operator starts, so both run against the same amount of stored data.
  const setupCreateSeconds = await createObjects(target.kubeConfig, ours, objects);
  if (options.naive) await createObjects(target.kubeConfig, naive, objects);

  const konductor = await catchUp(target, 'konductor-child.mjs', ours, objects, concurrency);
  const measuredCeiling = await measure(target.kubeConfig, () => ceiling(target, ours, objects, concurrency));
  const ceilingPerSecond = measuredCeiling.value;
  const ratio = Number(konductor.objectsPerSecond) / ceilingPerSecond;
  const lines: Figures[] = [
    { scenario: 'catch-up', ...konductor, concurrency, setupCreateSeconds: Math.round(setupCreateSeconds * 10) / 10, ...machine() },
    {
      scenario: 'ceiling',
      objects,
      objectsPerSecond: Math.round(ceilingPerSecond),
      apiWritesPerObject: round2(measuredCeiling.patches / objects),
      catchUpRatio: round2(ratio),
      ...cpuFigures(measuredCeiling, 0),
      concurrency,
      ...machine(),
    },
  ];
  if (options.naive) {
    const baseline = await catchUp(target, 'naive-child.mjs', naive, objects, concurrency);
    lines.push({
      scenario: 'catch-up-naive',
      ...baseline,
      concurrency,
      ceilingRatio: round2(Number(baseline.objectsPerSecond) / ceilingPerSecond),
      konductorObjectsPerSecond: konductor.objectsPerSecond,
      konductorPeakRssMb: konductor.peakRssMb,
      // Konductor's throughput and peak RSS as multiples of the naive operator's.
      konductorSpeedRatio: round2(Number(konductor.objectsPerSecond) / Number(baseline.objectsPerSecond)),
      konductorRssRatio: round2(Number(konductor.peakRssMb) / Number(baseline.peakRssMb)),
      ...machine(),
    });
  }
  return lines;
}
