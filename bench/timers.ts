// Benchmark: timer lateness (p50/p99 of actual minus planned start) and the operator's CPU share with
// BENCH_TIMER_OBJECTS (default 1,000) objects on a 1-second timer whose handler does nothing.
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { TestControlPlane, installCrds, readCrds } from '../src/testing/index.js';
import { createWidgets } from './widgets.js';

const objects = Number(process.env.BENCH_TIMER_OBJECTS ?? 1_000);
const windowSeconds = Number(process.env.BENCH_TIMER_WINDOW ?? 20);

const plane = await TestControlPlane.start();
try {
  await installCrds(plane.kubeConfig(), readCrds(fileURLToPath(new URL('../test/fixtures/widgets-crd.yaml', import.meta.url))));
  await createWidgets(plane.kubeConfig(), 'bench-timers', objects);
  const child = spawn(
    process.execPath,
    // BENCH_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the operator side.
    [...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), fileURLToPath(new URL('./timers-child.mjs', import.meta.url)), plane.kubeconfigPath, 'bench-timers', String(objects), String(windowSeconds)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`timer benchmark child exited with ${code}`);
  const figures = JSON.parse(out.trim()) as Record<string, unknown>;
  console.log(JSON.stringify({ scenario: 'timers', ...figures, machine: { cores: cpus().length, node: process.version } }));
} finally {
  await plane.stop();
}
