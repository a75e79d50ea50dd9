// Operator side of the scale benchmark (bench/scale.ts), in its own process with the Deployment's Node
// options so its heap cap is the deployed one. The catch-up handler (status.seen = spec.idx,
// status.startedAt) runs on `listed` objects that exist before it starts; once every one has had its
// last write (the diff-base PATCH) acknowledged it reports `caughtUp`, then keeps handling the steady
// creates (`s-<i>`, with spec.sentAt) and reports `result` once `steady` more are done. Memory figures
// are taken after full garbage collections, so they are the live set, not garbage waiting to be
// collected: `heapPerObjectBytes` is (heap in use now − heap in use before the operator started) ÷ the
// objects it watches. Bookkeeping here is one bit per object, so it adds nothing measurable to that.
import { getHeapStatistics, setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { runInNewContext } from 'node:vm';
import {
  benchResource,
  cpuSeconds,
  finishRun,
  loadFramework,
  send,
  startBenchOperator,
  throughput,
} from './child-common.mjs';

const [kubeconfigPath, namespace, listedText, steadyText, concurrencyText] = process.argv.slice(2);
const listed = Number(listedText);
const steady = Number(steadyText);
// A full collection on demand, without starting Node with --expose-gc (NODE_OPTIONS is the Deployment's).
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc');
const mb = (bytes) => Math.round((bytes / 2 ** 20) * 100) / 100;
/** Heap in use after two full collections: the live set. */
function liveHeap() {
  collect();
  collect();
  return process.memoryUsage().heapUsed;
}

const framework = await loadFramework();
const heapBefore = liveHeap();
const rssAfterImports = process.memoryUsage.rss();

// Peak RSS and peak heap in use, sampled every 20 ms (and the kernel's maxRSS for the RSS).
let peakRss = 0;
let peakHeapUsed = 0;
let heapTotalAtPeakRss = 0;
const sampler = setInterval(() => {
  const now = process.memoryUsage();
  if (now.rss > peakRss) {
    peakRss = now.rss;
    heapTotalAtPeakRss = now.heapTotal;
  }
  peakHeapUsed = Math.max(peakHeapUsed, now.heapUsed);
}, 20);
const peaks = () => ({
  peakRssMb: mb(Math.max(peakRss, process.resourceUsage().maxRSS * 1024)),
  heapAtPeakRssMb: mb(heapTotalAtPeakRss),
  peakHeapUsedMb: mb(peakHeapUsed),
});

// One bit per object: listed `o-<i>` at i, steady `s-<i>` at listed + i.
const done = new Uint8Array(listed + steady);
let listedDone = 0;
let steadyDone = 0;
const handlerMs = [];
const started = performance.now();
let caughtUpAt = 0;

function indexOf(name) {
  const dash = name.indexOf('-');
  const i = Number(name.slice(dash + 1));
  if (!Number.isInteger(i)) return -1;
  if (name.startsWith('o-') && i < listed) return i;
  if (name.startsWith('s-') && i < steady) return listed + i;
  return -1;
}

const registry = new framework.Registry().change(
  'create',
  { apiVersion: benchResource.apiVersion, name: benchResource.plural },
  async ({ spec, patch }) => {
    const now = Date.now();
    if (typeof spec.sentAt === 'number') handlerMs.push(now - spec.sentAt);
    patch.status.seen = spec.idx;
    patch.status.startedAt = now;
  },
  { id: 'bench' },
);
const operator = await startBenchOperator(framework, {
  kubeconfigPath,
  namespace,
  concurrency: Number(concurrencyText),
  registry,
  onPatch: (target) => {
    writesAcked += 1;
    if (target.status) return;
    const at = indexOf(target.name);
    if (at < 0 || done[at]) return;
    done[at] = 1;
    if (at < listed) {
      listedDone += 1;
      if (listedDone === midway) midwaySnapshot();
      if (listedDone === listed) void caughtUp();
    } else {
      steadyDone += 1;
      if (steadyDone === steady) void finish();
    }
  },
});
void operator.ready.then(() => send({ ready: true }));

// BENCH_SCALE_MIDWAY_SNAPSHOT=<path>: the live set halfway through catching up (objects queued, handled and echoed side by side).
const midway = process.env.BENCH_SCALE_MIDWAY_SNAPSHOT ? Math.floor(listed / 2) : -1;
function midwaySnapshot() {
  const heapUsed = liveHeap();
  writeHeapSnapshot(process.env.BENCH_SCALE_MIDWAY_SNAPSHOT);
  process.stderr.write(
    `${JSON.stringify({ midway: { handled: listedDone, liveHeapMb: mb(heapUsed), heapPerObjectBytes: Math.round((heapUsed - heapBefore) / listed) } })}\n`,
  );
}

// What the process spends outside the operator's work, per progress period: garbage collection
// (all pauses, and major mark-compacts alone) and the event loop's delay (a blocked loop reads no watch).
let writesAcked = 0;
const gc = { ms: 0, majorMs: 0, majors: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.ms += entry.duration;
    if (entry.detail?.kind === 4) {
      gc.majorMs += entry.duration;
      gc.majors += 1;
    }
  }
}).observe({ entryTypes: ['gc'] });
const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();
/** The period's GC and loop figures, then a fresh period. */
function periodFigures() {
  const figures = {
    gcMs: Math.round(gc.ms),
    gcMajorMs: Math.round(gc.majorMs),
    gcMajors: gc.majors,
    loopDelayP99Ms: Math.round(loopDelay.percentile(99) / 1e6),
    loopDelayMaxMs: Math.round(loopDelay.max / 1e6),
  };
  Object.assign(gc, { ms: 0, majorMs: 0, majors: 0 });
  loopDelay.reset();
  return figures;
}

// Progress on stderr every 10 s, so a phase that stalls shows where: objects done, steady handlers started.
// With the operator's own gauges and counters: events its watch delivered, runs queued and running, and
// how far its watch trails its own writes (`unseenEvents`: listed objects, steady creates handled and
// acknowledged writes, less the events the watch delivered; a lower bound: relists deliver some again,
// and steady creates not yet seen are not counted).
const progress = setInterval(async () => {
  const operatorFigures = await operatorProgress();
  const unseenEvents = listed + handlerMs.length + writesAcked - operatorFigures.watchEvents;
  process.stderr.write(
    `${JSON.stringify({ progress: { seconds: Math.round((performance.now() - started) / 1000), listedDone, steadyDone, steadyHandled: handlerMs.length, heapUsedMb: mb(process.memoryUsage().heapUsed), ...operatorFigures, writesAcked, unseenEvents, ...periodFigures() } })}\n`,
  );
}, 10_000);
progress.unref();

/** Sums of the operator's metrics that say where work waits. */
async function operatorProgress() {
  const text = await operator.metrics.text();
  const sum = (name) =>
    text
      .split('\n')
      .filter((line) => line.startsWith(name))
      .reduce((total, line) => total + Number(line.split(' ').pop()), 0);
  return {
    watchEvents: sum('konductor_watch_events_total'),
    reconnects: sum('konductor_watch_reconnects_total'),
    relists: sum('konductor_watch_relists_total'),
    queued: sum('konductor_reactor_queue_depth'),
    running: sum('konductor_reactor_running'),
  };
}

// Two seconds for the watch echoes of the last writes to arrive and be handled (which forgets those writes).
const settle = () => new Promise((resolve) => setTimeout(resolve, 2_000));

function memoryFigures(objects) {
  const heapUsed = liveHeap();
  // BENCH_SCALE_SNAPSHOT=<path>: a heap snapshot of the live set, to see where the memory goes.
  if (process.env.BENCH_SCALE_SNAPSHOT) writeHeapSnapshot(process.env.BENCH_SCALE_SNAPSHOT);
  return {
    liveHeapMb: mb(heapUsed),
    heapPerObjectBytes: Math.round((heapUsed - heapBefore) / objects),
    rssMb: mb(process.memoryUsage.rss()),
  };
}

async function caughtUp() {
  caughtUpAt = performance.now();
  const rate = throughput(listed, started, { until: caughtUpAt });
  const peak = peaks();
  await settle();
  send({
    caughtUp: {
      ...rate,
      ...peak,
      ...memoryFigures(listed),
      cpuSeconds: cpuSeconds(),
      // Without a steady phase (the priority scenario): how long each object created during the catch-up waited.
      ...(steady === 0 ? { createdDuringMs: handlerMs } : {}),
    },
  });
  if (steady === 0) void stop();
}

async function finish() {
  const seconds = (performance.now() - caughtUpAt) / 1000;
  const peak = peaks();
  await settle();
  await stop({
    objects: listed + steady,
    steadyObjects: steady,
    steadyWallSeconds: Math.round(seconds * 100) / 100,
    handlerMs,
    ...peak,
    ...memoryFigures(listed + steady),
    heapLimitMb: mb(getHeapStatistics().heap_size_limit),
    heapBeforeMb: mb(heapBefore),
    rssAfterImportsMb: mb(rssAfterImports),
    cpuSeconds: cpuSeconds(),
  });
}

/** Sends `result` (if any) and ends the process. */
function stop(result) {
  clearInterval(sampler);
  clearInterval(progress);
  return finishRun({ result, stop: () => operator.stop(2_000) });
}
