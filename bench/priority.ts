// Scenario "priority": N objects exist before the operator starts (bench/scale-child.mjs, its own
// process with the Deployment's Node options, the catch-up handler on every object). Once its initial
// listing is in (`ready`), new objects are created at a fixed rate (10/s) for as long as it catches up.
// Reported: how long each of those waited from its create to its handler (sent → handler start), with
// those still unhandled when the catch-up ends counted at that moment (a lower bound), and the
// catch-up's own throughput, against a control catch-up of as many objects with nothing created during
// it, run first in the same run. A change seen live must not wait behind the listing's backlog.
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
  round1,
  type BenchTarget,
  type Figures,
} from './support.js';

export interface PriorityOptions {
  /** Objects that exist before the operator starts. */
  objects: number;
  /** Creates per second while it catches up. */
  rate: number;
  concurrency: number;
  namespace: string;
}

/** Creates `p-<i>` at `rate` per second, open loop, until `signal` aborts; when each was sent. */
async function createUntil(
  target: BenchTarget,
  namespace: string,
  rate: number,
  signal: AbortSignal,
): Promise<number[]> {
  const client = new ApiClient(target.kubeConfig);
  const sent: number[] = [];
  const inFlight: Promise<unknown>[] = [];
  const started = performance.now();
  try {
    for (let i = 0; !signal.aborted; i++) {
      const wait = started + (i * 1000) / rate - performance.now();
      if (wait >= 1) await sleep(wait, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) break;
      const now = Date.now();
      sent.push(now);
      const body = {
        apiVersion: benchApiVersion,
        kind: benchResource.kind,
        metadata: { name: `p-${i}` },
        spec: { idx: i, sentAt: now },
      };
      inFlight.push(client.request('POST', collection(namespace), { body }));
    }
    await Promise.all(inFlight);
    return sent;
  } finally {
    client.close();
  }
}

/** The same catch-up with nothing created during it, in its own namespace: what serving the creates first costs. */
async function controlCatchUp(target: BenchTarget, options: PriorityOptions): Promise<Figures> {
  const namespace = `${options.namespace}-control`;
  await createObjects(target.kubeConfig, namespace, options.objects);
  const child = new OperatorProcess(target, 'scale-child.mjs', [
    namespace,
    options.objects,
    0,
    options.concurrency,
  ]);
  try {
    const caughtUp = (await child.message('caughtUp', 120_000 + options.objects * 100))
      .caughtUp as Figures;
    await child.result(60_000).catch(() => undefined);
    return caughtUp;
  } catch (error) {
    child.kill();
    throw error;
  }
}

export async function runPriority(target: BenchTarget, options: PriorityOptions): Promise<Figures> {
  const { objects, rate, concurrency, namespace } = options;
  await installBenchCrd(target.kubeConfig);
  // BENCH_PRIORITY_CONTROL=0 skips the control catch-up (half the time).
  const control =
    process.env.BENCH_PRIORITY_CONTROL === '0' ? undefined : await controlCatchUp(target, options);
  if (control)
    process.stderr.write(
      `bench: priority ${objects}: control catch-up ${JSON.stringify(control)}\n`,
    );
  const setupCreateSeconds = await createObjects(target.kubeConfig, namespace, objects);
  const child = new OperatorProcess(target, 'scale-child.mjs', [
    namespace,
    objects,
    0,
    concurrency,
  ]);
  const stop = new AbortController();
  try {
    await child.message('ready', 120_000 + objects * 10);
    const sending = createUntil(target, namespace, rate, stop.signal);
    const caughtUp = (await child.message('caughtUp', 120_000 + objects * 100)).caughtUp as Figures;
    const caughtUpAt = Date.now();
    stop.abort();
    const sent = await sending;
    await child.result(60_000).catch(() => undefined);
    const { createdDuringMs, ...rest } = caughtUp as Figures & { createdDuringMs: number[] };
    const handled = createdDuringMs.length;
    // Unhandled at the end: the last ones sent (a queue serves the earlier first), counted until the catch-up ended.
    const unhandled = sent.slice(handled).map((at) => Math.max(0, caughtUpAt - at));
    return {
      scenario: 'priority',
      objects,
      rate,
      createdDuringCatchUp: sent.length,
      handledDuringCatchUp: handled,
      ...latencyFigures('createToHandlerMs', [...createdDuringMs, ...unhandled]),
      catchUpSeconds: rest.seconds,
      objectsPerSecond: rest.objectsPerSecond,
      ...(control
        ? {
            controlCatchUpSeconds: control.seconds,
            controlObjectsPerSecond: control.objectsPerSecond,
            // What serving the live creates first cost the catch-up, against the control in this run.
            throughputDropPercent: round1(
              (1 - Number(rest.objectsPerSecond) / Number(control.objectsPerSecond)) * 100,
            ),
          }
        : {}),
      catchUpPeakRssMb: rest.peakRssMb,
      concurrency,
      setupCreateSeconds: round1(setupCreateSeconds),
      ...machine(),
    };
  } catch (error) {
    stop.abort();
    child.kill();
    throw error;
  }
}
