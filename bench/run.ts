// `npm run bench [-- <group>...]`: runs the benchmark groups (all by default) in turn, each on its own
// fresh test control plane, and prints one JSON line per scenario to stdout. Progress and the total
// wall time go to stderr. See bench/README.md for the groups, figures and environment overrides.
import { MEMORY_MODES, runMemory, type MemoryMode } from './memory.js';
import { runTakeover } from './takeover.js';
import { runShards } from './shards.js';
import { runPriority } from './priority.js';
import { TestControlPlane } from '../src/testing/index.js';
import { runAdmission } from './admission.js';
import { runCatchUp } from './catch-up.js';
import { runScale } from './scale.js';
import { compareSteady, runSteadyLoad } from './steady-load.js';
import { envNumber, type BenchTarget, type Figures } from './support.js';
import { runTimers } from './timers.js';
import { runUpdateStorm } from './update-storm.js';
import { runWatchReactor } from './watch-reactor.js';

const n = envNumber('BENCH_N', 10_000);
const concurrency = envNumber('BENCH_CONCURRENCY', 64);
const framework = process.env.BENCH_FRAMEWORK === 'src' ? 'src' : 'dist';

const groups: Record<string, (target: BenchTarget) => Promise<Figures[]>> = {
  'catch-up': (target) =>
    runCatchUp(target, {
      objects: n,
      concurrency,
      naive: true,
      statusStorage: true,
      tracing: process.env.BENCH_TRACING !== '0',
      baselineFramework: process.env.BENCH_BASELINE_FRAMEWORK,
    }),
  'steady-load': async (target) => {
    const options = {
      rate: envNumber('BENCH_STEADY_RATE', 100),
      seconds: envNumber('BENCH_STEADY_SECONDS', 60),
      concurrency,
    };
    const konductor = await runSteadyLoad(target, {
      ...options,
      operator: 'konductor',
      namespace: 'bench-steady',
    });
    const withStatus = await runSteadyLoad(target, {
      ...options,
      operator: 'konductor',
      namespace: 'bench-steady-status',
      storage: 'status',
    });
    const naive = await runSteadyLoad(target, {
      ...options,
      operator: 'naive',
      namespace: 'bench-steady-naive',
    });
    return [konductor, withStatus, compareSteady(konductor, naive)];
  },
  'update-storm': async (target) => [
    await runUpdateStorm(target, {
      objects: envNumber('BENCH_STORM_OBJECTS', 10),
      updates: envNumber('BENCH_STORM_UPDATES', 100),
      concurrency,
      namespace: 'bench-storm',
    }),
  ],
  'watch-reactor': (target) => runWatchReactor(target, { objects: n, namespace: 'bench-watch' }),
  timers: async (target) => [
    await runTimers(target, {
      objects: envNumber('BENCH_TIMER_OBJECTS', 1_000),
      windowSeconds: envNumber('BENCH_TIMER_WINDOW', 20),
      namespace: 'bench-timers',
    }),
  ],
  // The latency an admission webhook (validating + mutating) adds at 50 requests/s.
  admission: async (target) => [
    await runAdmission(target, {
      rate: envNumber('BENCH_ADMISSION_RATE', 50),
      seconds: envNumber('BENCH_ADMISSION_SECONDS', 30),
      namespace: 'bench-admission',
    }),
  ],
  // `konductor run` as users start it, idle and at BENCH_MEMORY_SIZES objects: peak RSS, heap, live heap per object, speed.
  memory: (target) =>
    runMemory(target, {
      sizes: sizes('BENCH_MEMORY_SIZES', '0,2000,10000'),
      idleSeconds: envNumber('BENCH_MEMORY_IDLE_SECONDS', 30),
      repeats: envNumber('BENCH_MEMORY_REPEATS', 1),
      modes: memoryModes(),
    }),
  // Creates at 10/s while 100,000 objects are caught up (BENCH_PRIORITY_OBJECTS, BENCH_PRIORITY_RATE): how long they wait.
  priority: async (target) => [
    await runPriority(target, {
      objects: envNumber('BENCH_PRIORITY_OBJECTS', 100_000),
      rate: envNumber('BENCH_PRIORITY_RATE', 10),
      concurrency,
      namespace: 'bench-priority',
    }),
  ],
  // A leader SIGKILLed beside a cold and a warm standby at BENCH_TAKEOVER_OBJECTS (10,000): from the kill to the first handled change.
  takeover: (target) =>
    runTakeover(target, { objects: envNumber('BENCH_TAKEOVER_OBJECTS', 10_000) }),
  // BENCH_SHARDS_OBJECTS (30,000) shared among BENCH_SHARDS_REPLICAS (1,2,3) sharded replicas: shares, heap, a kill.
  shards: (target) =>
    runShards(target, {
      sizes: sizes('BENCH_SHARDS_OBJECTS', '30000'),
      replicas: sizes('BENCH_SHARDS_REPLICAS', '1,2,3'),
    }),
  // 50,000 and 100,000 objects by default (BENCH_SCALE_OBJECTS=50000,100000), each size in its own namespace.
  scale: async (target) => {
    const lines: Figures[] = [];
    for (const objects of scaleSizes()) {
      const options = {
        objects,
        rate: envNumber('BENCH_SCALE_RATE', 100),
        seconds: envNumber('BENCH_SCALE_STEADY_SECONDS', 30),
        concurrency,
      };
      const line = await runScale(target, { ...options, namespace: `bench-scale-${objects}` });
      // On stderr at once too: a larger size that fails later must not take this one's figures along.
      process.stderr.write(`bench: scale ${objects}: ${JSON.stringify(line)}\n`);
      lines.push(line);
    }
    return lines;
  },
};
/** Groups that run only when named (`npm run bench -- scale`): they take longer than the rest together. */
const optIn = new Set(['scale', 'priority', 'memory', 'takeover', 'shards']);

function scaleSizes(): number[] {
  const counts = sizes('BENCH_SCALE_OBJECTS', '50000,100000');
  if (counts.includes(0)) throw new Error('BENCH_SCALE_OBJECTS must not include 0');
  return counts;
}

/** BENCH_MEMORY_MODES: some of the memory group's ways to start the operator, comma-separated (default: all). */
function memoryModes(): MemoryMode[] {
  const raw = process.env.BENCH_MEMORY_MODES;
  if (raw === undefined || raw.trim() === '') return [...MEMORY_MODES];
  const modes = raw.split(',').map((part) => part.trim());
  const unknown = modes.filter((mode) => !(MEMORY_MODES as readonly string[]).includes(mode));
  if (unknown.length > 0)
    throw new Error(
      `BENCH_MEMORY_MODES names ${unknown.join(', ')}; known: ${MEMORY_MODES.join(', ')}`,
    );
  return modes as MemoryMode[];
}

/** Object counts from a comma-separated variable: whole numbers, 0 or more. */
function sizes(variable: string, fallback: string): number[] {
  const raw = process.env[variable] ?? fallback;
  const counts = raw.split(',').map((part) => Number(part.trim()));
  if (counts.some((size) => !Number.isInteger(size) || size < 0))
    throw new Error(
      `${variable} must be whole numbers separated by commas, got ${JSON.stringify(raw)}`,
    );
  return counts;
}

const selected = process.argv.slice(2);
for (const name of selected) {
  if (!(name in groups))
    throw new Error(`unknown benchmark group '${name}'; known: ${Object.keys(groups).join(', ')}`);
}
const started = performance.now();
for (const [name, run] of Object.entries(groups)) {
  if (selected.length > 0 ? !selected.includes(name) : optIn.has(name)) continue;
  const groupStarted = performance.now();
  process.stderr.write(`bench: ${name}...\n`);
  const plane = await TestControlPlane.start();
  try {
    for (const line of await run({
      kubeConfig: plane.kubeConfig(),
      kubeconfigPath: plane.kubeconfigPath,
      framework,
    }))
      console.log(JSON.stringify(line));
  } finally {
    await plane.stop();
  }
  process.stderr.write(
    `bench: ${name} took ${Math.round((performance.now() - groupStarted) / 1000)} s\n`,
  );
}
process.stderr.write(`bench: total ${Math.round((performance.now() - started) / 1000)} s\n`);
