// Scenarios "watch-reactor-listing" and "reactor-alone": events per second through the watch stream +
// reactor, and the operator's peak RSS, with N (default 10,000) objects watched on the control plane
// (bench/watch-reactor-child.mjs, its own process); then the reactor alone (no API server) on
// synthetic events, in-process.
import { Reactor } from '../src/framework/reactor/reactor.js';
import type { ObjectEvent } from '../src/framework/watching/watch-events.js';
import {
  createObjects,
  installBenchCrd,
  machine,
  OperatorProcess,
  round1,
  type BenchTarget,
  type Figures,
} from './support.js';

async function reactorAlone(objects: number): Promise<Figures> {
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
      object: {
        metadata: {
          uid: `uid-${id}`,
          name: `o-${id}`,
          namespace: 'bench',
          resourceVersion: String(i),
        },
        spec: { idx: i },
      },
    };
    reactor.push(event, undefined);
    if (i % 1_000 === 0) await new Promise((resolve) => setImmediate(resolve)); // let runs interleave, as a live watch would
  }
  await reactor.onIdle();
  const seconds = (performance.now() - started) / 1000;
  await reactor.stop(1_000);
  return {
    events,
    objects,
    processedEvents: processed,
    seconds: Math.round(seconds * 100) / 100,
    eventsPerSecond: Math.round(events / seconds),
  };
}

export async function runWatchReactor(
  target: BenchTarget,
  options: { objects: number; namespace: string },
): Promise<Figures[]> {
  await installBenchCrd(target.kubeConfig);
  const createSeconds = await createObjects(target.kubeConfig, options.namespace, options.objects);
  const listing = await new OperatorProcess(target, 'watch-reactor-child.mjs', [
    options.namespace,
    options.objects,
  ]).result(120_000);
  return [
    {
      scenario: 'watch-reactor-listing',
      ...listing,
      setupCreateSeconds: round1(createSeconds),
      ...machine(),
    },
    { scenario: 'reactor-alone', ...(await reactorAlone(options.objects)), ...machine() },
  ];
}
