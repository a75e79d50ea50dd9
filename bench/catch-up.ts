// Benchmarks "catch-up" and "ceiling": N widgets exist before the operator starts; a create handler
// copies spec.size to status.seen. Then, in the same run, a plain client with the same concurrency
// makes the same writes (status PATCH plus the bookkeeping PATCH) with no framework: the ceiling.
// API writes per object are read from the API server's own apiserver_request_total.
import { spawn } from 'node:child_process';
import { request } from 'node:https';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '../src/framework/index.js';
import { TestControlPlane, installCrds, readCrds } from '../src/testing/index.js';
import { widgetResource } from '../test/support/widgets.js';
import { createWidgets } from './widgets.js';

const objects = Number(process.env.BENCH_CATCHUP_OBJECTS ?? 10_000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
const machine = { cores: cpus().length, node: process.version };

/** Sum of apiserver_request_total for PATCH on widgets (main resource and status). */
function widgetPatches(plane: TestControlPlane): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${plane.server}/metrics`, { headers: { Authorization: `Bearer ${plane.adminToken}` }, rejectUnauthorized: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let sum = 0;
        for (const line of text.split('\n')) {
          if (line.startsWith('apiserver_request_total{') && line.includes('resource="widgets"') && line.includes('verb="PATCH"')) {
            sum += Number(line.slice(line.lastIndexOf(' ') + 1));
          }
        }
        resolve(sum);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

function runChild(plane: TestControlPlane, namespace: string): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./catch-up-child.mjs', import.meta.url)), plane.kubeconfigPath, namespace, String(objects), String(concurrency)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim()) as Record<string, unknown>) : reject(new Error(`catch-up child exited ${code}`)))),
  );
}

/** The same writes with a plain client: one status PATCH and one bookkeeping PATCH per object. */
async function ceiling(plane: TestControlPlane, namespace: string): Promise<number> {
  const client = new ApiClient(plane.kubeConfig());
  const base = `/apis/${widgetResource.group}/${widgetResource.version}/namespaces/${namespace}/${widgetResource.plural}`;
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < objects) {
      const name = `w-${next++}`;
      await client.request('PATCH', `${base}/${name}/status`, { body: { status: { seen: -1, handledAt: new Date().toISOString() } }, contentType: 'application/merge-patch+json' });
      await client.request('PATCH', `${base}/${name}`, { body: { metadata: { annotations: { 'bench/ceiling': String(next) } } }, contentType: 'application/merge-patch+json' });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  client.close();
  return objects / ((performance.now() - started) / 1000);
}

const plane = await TestControlPlane.start();
try {
  await installCrds(plane.kubeConfig(), readCrds(fileURLToPath(new URL('../test/fixtures/widgets-crd.yaml', import.meta.url))));
  await createWidgets(plane.kubeConfig(), 'bench-catch-up', objects);
  const before = await widgetPatches(plane);
  const catchUp = await runChild(plane, 'bench-catch-up');
  const writes = (await widgetPatches(plane)) - before;
  const ceilingPerSecond = await ceiling(plane, 'bench-catch-up');
  const ratio = Number(catchUp.objectsPerSecond) / ceilingPerSecond;
  console.log(JSON.stringify({ scenario: 'catch-up', ...catchUp, apiWritesPerObject: Math.round((writes / objects) * 100) / 100, concurrency, machine }));
  console.log(JSON.stringify({ scenario: 'ceiling', objects, objectsPerSecond: Math.round(ceilingPerSecond), catchUpRatio: Math.round(ratio * 100) / 100, concurrency, machine }));
} finally {
  await plane.stop();
}
