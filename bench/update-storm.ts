// Scenario "update-storm": `objects` objects (default 10) exist and their creation has been handled;
// then each gets `updates` (default 100) merge PATCHes of spec.value = 1..updates, each object's
// sequential (so the last state is known) and all objects at once, as fast as the client can send.
// An update handler on spec.value copies it to status.value and counts its runs (bench/storm-child.mjs).
// Figures: handler runs per object (fewer than the updates: the reactor hands a run only the newest
// state), and the time from the first update sent to the status write of the last value acknowledged
// for every object.
import { ApiClient } from '../src/framework/api/api-client.js';
import {
  collection,
  createObjects,
  installBenchCrd,
  listObjects,
  machine,
  measure,
  OperatorProcess,
  round1,
  round2,
  type BenchTarget,
  type Figures,
} from './support.js';

export interface UpdateStormOptions {
  objects: number;
  /** Updates per object. */
  updates: number;
  concurrency: number;
  namespace: string;
  /** After the last state is handled, wait this long without a handler run before counting runs. Default 2,000 ms. */
  settleMs?: number;
}

export async function runUpdateStorm(
  target: BenchTarget,
  options: UpdateStormOptions,
): Promise<Figures> {
  const { objects, updates, concurrency, namespace } = options;
  await installBenchCrd(target.kubeConfig);
  await createObjects(target.kubeConfig, namespace, objects, 'u', (i) => ({ idx: i, value: 0 }));
  const child = new OperatorProcess(target, 'storm-child.mjs', [
    namespace,
    objects,
    updates,
    concurrency,
    options.settleMs ?? 2_000,
  ]);
  try {
    await child.message('ready', 60_000);
  } catch (error) {
    child.kill();
    throw error;
  }
  const client = new ApiClient(target.kubeConfig);
  let stormStartedAt = 0;
  let sendSeconds = 0;
  const measured = await measure(target.kubeConfig, async () => {
    stormStartedAt = Date.now();
    try {
      await Promise.all(
        Array.from({ length: objects }, async (_, i) => {
          for (let value = 1; value <= updates; value++) {
            await client.request('PATCH', `${collection(namespace)}/u-${i}`, {
              body: { spec: { value } },
              contentType: 'application/merge-patch+json',
            });
          }
        }),
      );
    } finally {
      client.close();
    }
    sendSeconds = (Date.now() - stormStartedAt) / 1000;
    return child.result(120_000);
  });
  const result = measured.value;
  const operatorWrites = measured.patches - objects * updates;
  const final = await listObjects(target.kubeConfig, namespace);
  const finalStateHandled =
    final.length === objects && final.every((o) => o.status?.value === updates);
  const counts = Object.values(result.runs as Record<string, number>);
  while (counts.length < objects) counts.push(0);
  return {
    scenario: 'update-storm',
    objects,
    updatesPerObject: updates,
    sendSeconds: round2(sendSeconds),
    secondsToLastStateHandled: round2((Number(result.lastHandledAt) - stormStartedAt) / 1000),
    handlerRunsPerObjectMean: round1(counts.reduce((a, b) => a + b, 0) / objects),
    handlerRunsPerObjectMin: Math.min(...counts),
    handlerRunsPerObjectMax: Math.max(...counts),
    operatorWritesPerObject: round1(operatorWrites / objects),
    finalStateHandled,
    peakRssMb: result.peakRssMb,
    heapAtPeakMb: result.heapAtPeakMb,
    concurrency,
    ...machine(),
  };
}
