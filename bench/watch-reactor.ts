// Benchmark: events per second through the watch stream + reactor, and the operator's peak RSS,
// with N (default 10,000) objects watched on the real test control plane. Also the reactor alone
// (no API server) on synthetic events. Prints one JSON line per scenario.
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Reactor } from '../src/framework/reactor/reactor.js';
import type { ObjectEvent } from '../src/framework/watching/events.js';
import { TestControlPlane, installCrds, readCrds } from '../src/testing/index.js';
import { createWidgets } from './widgets.js';

const objects = Number(process.env.BENCH_OBJECTS ?? 10_000);
const machine = { cores: cpus().length, node: process.version };

function runChild(kubeconfigPath: string, namespace: string): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./watch-reactor-child.mjs', import.meta.url)), kubeconfigPath, namespace, String(objects)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim()) as Record<string, unknown>) : reject(new Error(`child exited ${code}`)))),
  );
}

async function reactorAlone(): Promise<Record<string, unknown>> {
  const events = 200_000;
  let processed = 0;
  const reactor = new Reactor(async ({ events: batch }) => {
    processed += batch.length;
  });
  const started = performance.now();
  for (let i = 0; i < events; i++) {
    const id = i % objects;
    const event: ObjectEvent = {
      type: 'MODIFIED',
      fromList: false,
      object: { metadata: { uid: `uid-${id}`, name: `w-${id}`, namespace: 'bench', resourceVersion: String(i) }, spec: { size: i } },
    };
    reactor.push(event, undefined);
    if (i % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve)); // let runs interleave, as a live watch would
  }
  await reactor.onIdle();
  const seconds = (performance.now() - started) / 1000;
  await reactor.stop(1_000);
  return { events, objects, processedEvents: processed, seconds: Math.round(seconds * 100) / 100, eventsPerSecond: Math.round(events / seconds) };
}

const plane = await TestControlPlane.start();
try {
  await installCrds(plane.kubeConfig(), readCrds(fileURLToPath(new URL('../test/fixtures/widgets-crd.yaml', import.meta.url))));
  const createSeconds = await createWidgets(plane.kubeConfig(), 'bench', objects);
  const listing = await runChild(plane.kubeconfigPath, 'bench');
  console.log(JSON.stringify({ scenario: 'watch-reactor-listing', ...listing, setupCreateSeconds: Math.round(createSeconds * 10) / 10, machine }));
  console.log(JSON.stringify({ scenario: 'reactor-alone', ...(await reactorAlone()), machine }));
} finally {
  await plane.stop();
}
