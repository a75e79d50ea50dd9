// Group "memory": the operator as users run it: `konductor run handlers.ts` in a project that has the
// package installed (package.json, bin/, dist/; no src/), with a TypeScript handler file
// (bench/memory/handlers.ts). For each size (0: the idle operator), that many objects exist before it
// starts, and it runs three ways, one after the other, each on objects of its own: through bin/konductor
// with no options (the heap sized by its rule, TurboFan paused until the listings are done), as node
// alone runs it (`node --turbofan bin/konductor.mjs`: the heap sized from the machine and TurboFan on
// throughout, as before either rule), and with the Deployment's NODE_OPTIONS. Peak and current
// RSS come from the kernel (VmHWM, VmRSS); the heap from a probe loaded with --import
// (bench/memory/probe.mjs), read once every object is handled.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../src/framework/api/api-client.js';
import { watchResource } from '../src/framework/watching/watch-stream.js';
import {
  benchNodeOptions,
  benchResource,
  createNamespace,
  createObjects,
  installBenchCrd,
  machine,
  round1,
  round2,
  type BenchTarget,
  type Figures,
} from './support.js';

const repo = fileURLToPath(new URL('..', import.meta.url));
/** The diff-base annotation: with annotation storage, each object's last write sets it. */
const DIFF_BASE = 'konductor.dev/last-handled-configuration';
const MB = 2 ** 20;

/** How the operator is started. */
export type MemoryMode = 'konductor' | 'node-defaults' | 'deployment';
export const MEMORY_MODES: readonly MemoryMode[] = ['konductor', 'node-defaults', 'deployment'];

export interface MemoryOptions {
  /** Object counts; 0 measures the idle operator. */
  sizes: readonly number[];
  /** How long the idle operator runs after its listings before it is measured, in seconds. */
  idleSeconds: number;
  modes?: readonly MemoryMode[];
  /**
   * Runs of each mode per size above 0, interleaved (the modes' order reversed every other time, so
   * the machine's drift falls on each alike). With more than one, a `memory-summary` line per size
   * and mode gives the means: one run's speed swings by 10-20 % on this machine.
   */
  repeats?: number;
}

/** What the probe writes on SIGUSR2 (bytes). */
interface ProbeReading {
  heapUsedPeak: number;
  heapTotalPeak: number;
  liveHeap: number;
  heapTotal: number;
  rss: number;
  heapLimit: number;
}

/** A project with konductor installed as npm installs it; returns its folder. */
function userProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'konductor-memory-bench-'));
  const pkg = join(dir, 'node_modules', 'konductor');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  copyFileSync(join(repo, 'package.json'), join(pkg, 'package.json'));
  for (const file of ['konductor', 'konductor.mjs'])
    copyFileSync(join(repo, 'bin', file), join(pkg, 'bin', file));
  // Node follows the link: dist's modules load from the repository, beside its node_modules.
  symlinkSync(join(repo, 'dist'), join(pkg, 'dist'));
  copyFileSync(join(repo, 'bench', 'memory', 'handlers.ts'), join(dir, 'handlers.ts'));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'memory-bench', private: true, type: 'module' }),
  );
  return dir;
}

/** The kernel's view of a process: peak and current RSS in MB. */
function kernelRss(pid: number): { peakRssMb: number; rssMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]);
  return { peakRssMb: round1(kb('VmHWM') / 1024), rssMb: round1(kb('VmRSS') / 1024) };
}

/** Resolves once `count` objects of `namespace` carry the diff-base (their last write), with the moment. */
function allHandled(
  kc: KubeConfig,
  namespace: string,
  count: number,
): {
  done: Promise<number>;
  listed: Promise<void>;
  stop(): void;
} {
  const client = new ApiClient(kc);
  const handled = new Set<string>();
  let listed!: () => void;
  let done!: (at: number) => void;
  const listedPromise = new Promise<void>((resolve) => (listed = resolve));
  const donePromise = new Promise<number>((resolve) => (done = resolve));
  const subscription = watchResource(client, benchResource, { namespace }).subscribe((event) => {
    if (event.type === 'SYNCED') listed();
    if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return;
    if (event.object.metadata?.annotations?.[DIFF_BASE] === undefined) return;
    handled.add(event.object.metadata?.name ?? '');
    if (handled.size === count) done(performance.now());
  });
  return {
    done: donePromise,
    listed: listedPromise,
    stop() {
      subscription.unsubscribe();
      client.close();
    },
  };
}

/** `konductor run` started one of the three ways, in `project`, on `namespace`. */
function startOperator(
  target: BenchTarget,
  project: string,
  namespace: string,
  mode: MemoryMode,
  probeFile: string,
  idle: boolean,
): ChildProcess {
  const bin = join(project, 'node_modules', 'konductor', 'bin');
  const probe = `--import=${pathToFileURL(join(repo, 'bench', 'memory', 'probe.mjs')).href}`;
  const heap = mode === 'deployment' ? benchNodeOptions() : '';
  const args = [
    'run',
    'handlers.ts',
    '--namespace',
    namespace,
    '--kubeconfig',
    target.kubeconfigPath,
    '--standalone',
    '--health-port',
    '0',
    '--log-format',
    'json',
  ];
  const [command, argv] =
    mode === 'konductor'
      ? ['sh', [join(bin, 'konductor'), ...args]]
      : mode === 'node-defaults'
        ? // --turbofan is node's default; given, it tells konductor the user chose the compiler
          [process.execPath, ['--turbofan', join(bin, 'konductor.mjs'), ...args]]
        : [process.execPath, [join(bin, 'konductor.mjs'), ...args]];
  return spawn(command, argv, {
    cwd: project,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      NODE_OPTIONS: `${probe} ${heap}`.trim(),
      BENCH_PROBE_FILE: probeFile,
      BENCH_PROBE_SAMPLING: idle ? 'off' : 'on',
    },
  });
}

/** Resolves when the operator logs that its listings are done; drains its log lines. */
function listingsDone(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      buffer += chunk;
      if (buffer.includes('initial listings done')) resolve();
      buffer = buffer.slice(buffer.lastIndexOf('\n') + 1);
    });
    child.once('exit', (code) =>
      reject(new Error(`konductor run exited with ${code} before its listings`)),
    );
  });
}

async function readProbe(child: ChildProcess, file: string): Promise<ProbeReading> {
  child.kill('SIGUSR2');
  for (let waited = 0; waited < 30_000; waited += 50) {
    if (existsSync(file)) {
      const text = readFileSync(file, 'utf8');
      if (text.endsWith('}')) return JSON.parse(text) as ProbeReading;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the memory probe wrote nothing within 30 s');
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return; // already gone (it crashed)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

/** One operator run: `objects` existing objects (0: idle for `idleSeconds`), started `mode`'s way. */
async function measureRun(
  target: BenchTarget,
  project: string,
  mode: MemoryMode,
  objects: number,
  idleSeconds: number,
  run: number,
): Promise<Figures> {
  const namespace = `bench-memory-${run}-${mode}-${objects}`;
  if (objects > 0) await createObjects(target.kubeConfig, namespace, objects);
  else await createNamespace(target.kubeConfig, namespace);
  const watch = allHandled(target.kubeConfig, namespace, objects);
  await watch.listed;
  const probeFile = join(project, `${namespace}.json`);
  const started = performance.now();
  const child = startOperator(target, project, namespace, mode, probeFile, objects === 0);
  try {
    const listed = listingsDone(child);
    listed.catch(() => undefined); // awaited only when idle; an exit fails the catch-up below
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) =>
        reject(new Error(`konductor run (${mode}) exited with ${code}`)),
      ),
    );
    exited.catch(() => undefined);
    let seconds: number | undefined;
    if (objects > 0) {
      seconds = ((await Promise.race([watch.done, exited])) - started) / 1000;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } else {
      await listed;
      await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    }
    const kernel = kernelRss(child.pid!);
    const probe = await readProbe(child, probeFile);
    return {
      scenario: objects === 0 ? 'memory-idle' : 'memory',
      mode,
      objects,
      ...(seconds === undefined
        ? { idleSeconds }
        : { seconds: round1(seconds), objectsPerSecond: Math.round(objects / seconds) }),
      ...kernel,
      heapUsedPeakMb: round1(probe.heapUsedPeak / MB),
      heapTotalPeakMb: round1(probe.heapTotalPeak / MB),
      liveHeapMb: round1(probe.liveHeap / MB),
      heapLimitMb: Math.round(probe.heapLimit / MB),
      ...machine(),
      // The operator's own: bin/konductor's flags do not show here, its heapLimitMb does.
      nodeOptions: mode === 'deployment' ? benchNodeOptions() : '',
    };
  } finally {
    watch.stop();
    await stop(child);
  }
}

/** Runs every size, each in every mode; adds each run's live heap per object and speed against node's defaults. */
export async function runMemory(target: BenchTarget, options: MemoryOptions): Promise<Figures[]> {
  await installBenchCrd(target.kubeConfig);
  const project = userProject();
  const modes = options.modes ?? MEMORY_MODES;
  const lines: Figures[] = [];
  try {
    const idleLive = new Map<MemoryMode, number>();
    let run = 0;
    for (const objects of options.sizes) {
      const repeats = objects > 0 ? Math.max(1, options.repeats ?? 1) : 1;
      const all: Figures[] = [];
      for (let repeat = 0; repeat < repeats; repeat++) {
        const runs = new Map<MemoryMode, Figures>();
        for (const mode of repeat % 2 === 0 ? modes : [...modes].reverse()) {
          process.stderr.write(`bench: memory ${mode} ${objects}...\n`);
          const figures = await measureRun(
            target,
            project,
            mode,
            objects,
            options.idleSeconds,
            run++,
          );
          if (objects === 0) idleLive.set(mode, Number(figures.liveHeapMb));
          runs.set(mode, figures);
        }
        const base = runs.get('node-defaults');
        for (const mode of modes) {
          const figures = runs.get(mode)!;
          const idle = idleLive.get(mode);
          if (objects > 0 && idle !== undefined)
            figures.liveHeapPerObjectBytes = Math.round(
              ((Number(figures.liveHeapMb) - idle) * MB) / objects,
            );
          if (objects > 0 && base && figures !== base)
            figures.speedRatioToNodeDefaults = round2(
              Number(figures.objectsPerSecond) / Number(base.objectsPerSecond),
            );
          if (base && figures !== base)
            figures.peakRssRatioToNodeDefaults = round2(
              Number(figures.peakRssMb) / Number(base.peakRssMb),
            );
          lines.push(figures);
          all.push(figures);
        }
      }
      if (repeats > 1) lines.push(...summaries(all, modes, objects, repeats));
    }
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
  return lines;
}

/** Per mode, the means of a size's runs; speed against node's defaults as the ratio of their total times. */
function summaries(
  runs: readonly Figures[],
  modes: readonly MemoryMode[],
  objects: number,
  repeats: number,
): Figures[] {
  const of = (mode: MemoryMode) => runs.filter((figures) => figures.mode === mode);
  const total = (figures: readonly Figures[], field: string) =>
    figures.reduce((sum, line) => sum + Number(line[field]), 0);
  const baseSeconds = total(of('node-defaults'), 'seconds');
  return modes.map((mode) => {
    const mine = of(mode);
    const peaks = mine.map((line) => Number(line.peakRssMb));
    const seconds = total(mine, 'seconds');
    return {
      scenario: 'memory-summary',
      mode,
      objects,
      runs: repeats,
      meanSeconds: round2(seconds / mine.length),
      objectsPerSecond: Math.round((objects * mine.length) / seconds),
      peakRssMbMin: Math.min(...peaks),
      peakRssMbMax: Math.max(...peaks),
      ...(mode === 'node-defaults' || baseSeconds === 0
        ? {}
        : { speedRatioToNodeDefaults: round2(baseSeconds / seconds) }),
      ...machine(),
      nodeOptions: mode === 'deployment' ? benchNodeOptions() : '',
    };
  });
}
