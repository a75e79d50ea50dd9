// Scenarios "catch-up", "ceiling" and "catch-up-naive": N bench objects exist before the operator starts;
// a create handler copies spec.idx to status.seen and records when it started. Then, in the same run, a
// plain client with no framework writes to those objects as fast as this control plane lets it: the
// ceiling (bench/ceiling.ts), swept over client concurrencies for 1 and 2 writes per object (and for the
// operator's own writes per object, should that be another number), on new objects of its own created
// with the operator's before either runs. Catch-up is reported as a ratio to
// the ceiling with the same writes per object and to the 1-write ceiling. Finally the naive baseline
// (bench/naive-child.mjs, client-node's informer and a status merge patch) catches up on its own N objects.
// With `statusStorage`, Konductor also catches up on its own N objects with storage: 'status' ("catch-up-status").
// API writes per object are read from the API server's own apiserver_request_total.
import {
  CEILING_CONCURRENCIES,
  CeilingPool,
  sweepCeilings,
  sweepObjects,
  watchedPoint,
  type CeilingSweep,
} from './ceiling.js';
import {
  createObjects,
  installBenchCrd,
  cpuFigures,
  machine,
  measure,
  OperatorProcess,
  round1,
  round2,
  type BenchTarget,
  type Figures,
} from './support.js';
import { startOtlpSink } from './otlp-sink.js';

export interface CatchUpOptions {
  objects: number;
  concurrency: number;
  /** Also run the naive baseline on its own N objects. */
  naive: boolean;
  /** Also catch up with status storage (`storage: 'status'`) on its own N objects, in the same run. */
  statusStorage?: boolean;
  /** Also catch up with tracing on (every trace sampled, to a loopback receiver) on its own N objects. */
  tracing?: boolean;
  /**
   * The framework's index.js of another build (a file URL), to catch up with it on its own N objects
   * first: the same run's figures for a change against the code before it ("catch-up-baseline").
   */
  baselineFramework?: string;
  /** Namespace prefix (namespaces must be new). */
  prefix?: string;
  /**
   * How long each ceiling sweep point writes at most, in seconds (default 8): long enough to be a rate,
   * short enough that the 8 points together cost about a minute on 2 cores.
   */
  ceilingPointSeconds?: number;
  /**
   * How many new objects each ceiling sweep point writes at most (default 3,000, at most `objects`); the
   * sweep's 8 points need 8 times as many, created before the operators run.
   */
  ceilingPointObjects?: number;
}

/** One operator process catching up on `objects` objects in `namespace`: its figures, API writes per object, CPU shares. */
async function catchUp(
  target: BenchTarget,
  script: string,
  namespace: string,
  objects: number,
  concurrency: number,
  storage?: 'status',
  otlpUrl?: string,
  framework?: string,
): Promise<Figures> {
  const child = new OperatorProcess(target, script, [namespace, objects, concurrency], {
    loadsFramework: script !== 'naive-child.mjs',
    env: {
      ...(framework ? { BENCH_FRAMEWORK: framework } : {}),
      ...(storage ? { BENCH_STORAGE: storage } : {}),
      ...(otlpUrl ? { BENCH_OTLP_URL: otlpUrl } : {}),
    },
  });
  // Generous: a catch-up slower than 10 objects/s means something is broken, not slow.
  const started = performance.now();
  const measured = await measure(target.kubeConfig, () => child.result(60_000 + objects * 100));
  const { writtenMs: _written, cpuSecondsAtReady: _ready, cpuSeconds, ...figures } = measured.value;
  // The process lives through the whole measured stretch (it exits right after its result).
  const operatorCpuPercent = round1(
    (Number(cpuSeconds) / ((performance.now() - started) / 1000)) * 100,
  );
  return {
    ...figures,
    apiWritesPerObject: round2(measured.patches / objects),
    ...cpuFigures(measured, operatorCpuPercent),
  };
}

/** `oneWrite`, `twoWrites`, `3Writes`…: how figures of a k-write ceiling are named. */
function writesName(writesPerObject: number): string {
  return writesPerObject === 1
    ? 'oneWrite'
    : writesPerObject === 2
      ? 'twoWrites'
      : `${writesPerObject}Writes`;
}

/** The writes per object an operator made, as a whole number of writes for its ceiling (at least 1). */
function wholeWrites(figures: Figures): number {
  return Math.max(1, Math.round(Number(figures.apiWritesPerObject)));
}

/** A sweep's figures: the best objects/s, the concurrency it came at, and objects/s per concurrency. */
function sweepFigures(sweep: CeilingSweep): Figures {
  const name = writesName(sweep.writesPerObject);
  return {
    [`${name}ObjectsPerSecond`]: Math.round(sweep.best.objectsPerSecond),
    [`${name}BestConcurrency`]: sweep.best.concurrency,
    [`${name}Sweep`]: Object.fromEntries(
      sweep.points.map((p) => [String(p.concurrency), Math.round(p.objectsPerSecond)]),
    ),
  };
}

/** Runs catch-up (and the ceiling, and optionally the naive baseline); returns one figures line per scenario. */
export async function runCatchUp(target: BenchTarget, options: CatchUpOptions): Promise<Figures[]> {
  const { objects, concurrency } = options;
  const prefix = options.prefix ?? 'bench';
  await installBenchCrd(target.kubeConfig);
  const ours = `${prefix}-catch-up`;
  const naive = `${prefix}-catch-up-naive`;
  const status = `${prefix}-catch-up-status`;
  const traced = `${prefix}-catch-up-traced`;
  const untracedAgain = `${prefix}-catch-up-again`;
  const baseline = `${prefix}-catch-up-baseline`;
  // Every set exists before any operator starts, so all run against the same amount of stored data.
  const setupCreateSeconds = await createObjects(target.kubeConfig, ours, objects);
  if (options.naive) await createObjects(target.kubeConfig, naive, objects);
  if (options.statusStorage) await createObjects(target.kubeConfig, status, objects);
  if (options.baselineFramework) await createObjects(target.kubeConfig, baseline, objects);
  if (options.tracing) {
    await createObjects(target.kubeConfig, traced, objects);
    await createObjects(target.kubeConfig, untracedAgain, objects);
  }
  // The ceiling's new objects for its 1- and 2-write sweeps and the two watched points, created with the operators'.
  const pointSize = {
    objects: Math.min(objects, options.ceilingPointObjects ?? 3_000),
    seconds: options.ceilingPointSeconds ?? 8,
  };
  const pool = new CeilingPool(target, `${prefix}-ceiling`);
  const poolCreateSeconds = await pool.reserve(sweepObjects(2, pointSize) + 2 * pointSize.objects);

  const before = options.baselineFramework
    ? await catchUp(
        target,
        'konductor-child.mjs',
        baseline,
        objects,
        concurrency,
        undefined,
        undefined,
        options.baselineFramework,
      )
    : undefined;
  const konductor = await catchUp(target, 'konductor-child.mjs', ours, objects, concurrency);
  // Right after the untraced run, on as many objects of its own, and followed by another untraced one:
  // tracing's cost against the mean of the runs around it, so drift along the run does not count.
  const sink = options.tracing ? await startOtlpSink() : undefined;
  const withTracing = sink
    ? await catchUp(
        target,
        'konductor-child.mjs',
        traced,
        objects,
        concurrency,
        undefined,
        sink.url,
      )
    : undefined;
  await sink?.close();
  const after = withTracing
    ? await catchUp(target, 'konductor-child.mjs', untracedAgain, objects, concurrency)
    : undefined;
  const withStatus = options.statusStorage
    ? await catchUp(target, 'konductor-child.mjs', status, objects, concurrency, 'status')
    : undefined;

  // The ceiling, once the operators' processes have exited.
  const sweeps = new Map<number, CeilingSweep>();
  const sweep = async (writeCounts: readonly number[]): Promise<void> => {
    const missing = [...new Set(writeCounts)].filter((w) => !sweeps.has(w));
    if (missing.length > 0)
      for (const done of await sweepCeilings(target, pool, pointSize, missing))
        sweeps.set(done.writesPerObject, done);
  };
  const sweepStarted = performance.now();
  await sweep([1, 2, wholeWrites(konductor)]);
  const sweepSeconds = (performance.now() - sweepStarted) / 1000;
  // The same writes at the operator's concurrency with a plain watch open: the share of the gap to the
  // ceiling that any operator pays for seeing its own writes come back.
  const oneWriteWatched = await watchedPoint(target, pool, pointSize, 1, concurrency);
  const sameWritesWatched = await watchedPoint(
    target,
    pool,
    pointSize,
    wholeWrites(konductor),
    concurrency,
  );
  const oneWrite = sweeps.get(1)!;
  const sameWrites = sweeps.get(wholeWrites(konductor))!;
  const all = [...sweeps.values()].sort((a, b) => a.writesPerObject - b.writesPerObject);
  const points = all.flatMap((s) => s.points);
  const best = sameWrites.best;
  const lines: Figures[] = [
    {
      scenario: 'catch-up',
      ...konductor,
      concurrency,
      setupCreateSeconds: Math.round(setupCreateSeconds * 10) / 10,
      ...machine(),
    },
    {
      scenario: 'ceiling',
      // Each sweep point writes at most this many new objects, for at most about this long.
      pointObjectsLimit: pointSize.objects,
      pointSecondsLimit: pointSize.seconds,
      poolCreateSeconds: round1(poolCreateSeconds),
      writesPerObject: sameWrites.writesPerObject,
      // The ceiling with the operator's writes per object, and what the API server counted at its best point.
      objectsPerSecond: Math.round(best.objectsPerSecond),
      bestConcurrency: best.concurrency,
      apiWritesPerObject: round2(best.measured.patches / best.objects),
      catchUpRatioSameWrites: round2(
        Number(konductor.objectsPerSecond) / sameWrites.best.objectsPerSecond,
      ),
      catchUpRatioOneWrite: round2(
        Number(konductor.objectsPerSecond) / oneWrite.best.objectsPerSecond,
      ),
      ...Object.assign({}, ...all.map(sweepFigures)),
      concurrencies: CEILING_CONCURRENCIES,
      // With a plain watch open, at the operator's concurrency (not part of the ceiling).
      oneWriteWatchedObjectsPerSecond: Math.round(oneWriteWatched.objectsPerSecond),
      sameWritesWatchedObjectsPerSecond: Math.round(sameWritesWatched.objectsPerSecond),
      catchUpRatioSameWritesWatched: round2(
        Number(konductor.objectsPerSecond) / sameWritesWatched.objectsPerSecond,
      ),
      unchangedWrites: [...points, oneWriteWatched, sameWritesWatched].reduce(
        (sum, p) => sum + p.unchangedWrites,
        0,
      ),
      shortestPointSeconds: round2(Math.min(...points.map((p) => p.seconds))),
      fewestPointObjects: Math.min(...points.map((p) => p.objects)),
      sweepSeconds: round1(sweepSeconds),
      // CPU at the best point of the operator's writes per object.
      ...cpuFigures(best.measured, 0),
      operatorConcurrency: concurrency,
      ...machine(),
    },
  ];
  if (withStatus) {
    lines.push({
      scenario: 'catch-up-status',
      ...withStatus,
      concurrency,
      // Against annotation storage in this run, and against the ceiling of the writes it made and the 1-write one.
      speedRatioToAnnotations: round2(
        Number(withStatus.objectsPerSecond) / Number(konductor.objectsPerSecond),
      ),
      catchUpRatioOneWrite: round2(
        Number(withStatus.objectsPerSecond) / oneWrite.best.objectsPerSecond,
      ),
      catchUpRatioOneWriteWatched: round2(
        Number(withStatus.objectsPerSecond) / oneWriteWatched.objectsPerSecond,
      ),
      ...machine(),
    });
  }
  if (before) {
    lines.push({
      scenario: 'catch-up-baseline',
      ...before,
      concurrency,
      framework: options.baselineFramework,
      // This build's untraced catch-up (and the one after the traced run) against the baseline build's.
      throughputRatioOfThisBuild: round2(
        Number(konductor.objectsPerSecond) / Number(before.objectsPerSecond),
      ),
      peakRssRatioOfThisBuild: round2(Number(konductor.peakRssMb) / Number(before.peakRssMb)),
      ...(after
        ? {
            throughputRatioOfThisBuildAfter: round2(
              Number(after.objectsPerSecond) / Number(before.objectsPerSecond),
            ),
          }
        : {}),
      ...machine(),
    });
  }
  if (withTracing && sink && after) {
    const untraced = (key: string): number => (Number(konductor[key]) + Number(after[key])) / 2;
    const cpuMsPerObject = (percent: number, seconds: number): number =>
      round2((percent * seconds * 10) / objects);
    lines.push({
      scenario: 'catch-up-traced',
      ...withTracing,
      concurrency,
      spansReceived: sink.spans(),
      spansPerObject: round2(sink.spans() / objects),
      exportRequests: sink.requests(),
      untracedAfterObjectsPerSecond: after.objectsPerSecond,
      untracedAfterPeakRssMb: after.peakRssMb,
      // Against the mean of the untraced runs before and after it (target: throughput >= 0.85).
      throughputRatioToUntraced: round2(
        Number(withTracing.objectsPerSecond) / untraced('objectsPerSecond'),
      ),
      peakRssRatioToUntraced: round2(Number(withTracing.peakRssMb) / untraced('peakRssMb')),
      // Operator CPU per object: traced, and the mean of the untraced runs.
      cpuMsPerObject: cpuMsPerObject(
        Number(withTracing.operatorCpuPercent),
        Number(withTracing.seconds),
      ),
      untracedCpuMsPerObject: cpuMsPerObject(untraced('operatorCpuPercent'), untraced('seconds')),
      ...machine(),
    });
  }
  if (options.naive) {
    const baseline = await catchUp(target, 'naive-child.mjs', naive, objects, concurrency);
    // The naive operator makes one write per object: its ceiling is the 1-write one (or its own count's).
    await sweep([wholeWrites(baseline)]);
    const naiveCeiling = sweeps.get(wholeWrites(baseline))!;
    lines.push({
      scenario: 'catch-up-naive',
      ...baseline,
      concurrency,
      ceilingRatio: round2(Number(baseline.objectsPerSecond) / naiveCeiling.best.objectsPerSecond),
      ceilingWritesPerObject: naiveCeiling.writesPerObject,
      konductorObjectsPerSecond: konductor.objectsPerSecond,
      konductorPeakRssMb: konductor.peakRssMb,
      // Konductor's throughput and peak RSS as multiples of the naive operator's.
      konductorSpeedRatio: round2(
        Number(konductor.objectsPerSecond) / Number(baseline.objectsPerSecond),
      ),
      konductorRssRatio: round2(Number(konductor.peakRssMb) / Number(baseline.peakRssMb)),
      ...machine(),
    });
  }
  return lines;
}
