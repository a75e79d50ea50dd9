// Scenario "timers": timer lateness (p50/p99 of actual minus planned start) and the operator's CPU
// share with `objects` (default 1,000) objects on a 1-second timer whose handler does nothing
// (bench/timers-child.mjs, its own process).
import {
  createObjects,
  installBenchCrd,
  machine,
  OperatorProcess,
  type BenchTarget,
  type Figures,
} from './support.js';

export async function runTimers(
  target: BenchTarget,
  options: { objects: number; windowSeconds: number; namespace: string },
): Promise<Figures> {
  await installBenchCrd(target.kubeConfig);
  await createObjects(target.kubeConfig, options.namespace, options.objects);
  const child = new OperatorProcess(target, 'timers-child.mjs', [
    options.namespace,
    options.objects,
    options.windowSeconds,
  ]);
  const figures = await child.result(120_000 + options.windowSeconds * 1_000);
  return { scenario: 'timers', ...figures, ...machine() };
}
