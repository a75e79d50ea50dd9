// The benchmark's smoke version, so it cannot rot: the catch-up (with its ceiling and the naive
// baseline), steady-load and update-storm harnesses at a small size on the shared control plane.
// Only that they complete and produce well-formed figures is asserted, never timings (the machine
// may be busy). The operator processes load the framework from its TypeScript sources through tsx,
// so no `npm run build` is needed.
import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import { runCatchUp } from '../../../bench/catch-up.js';
import { runSteadyLoad } from '../../../bench/steady-load.js';
import type { BenchTarget, Figures } from '../../../bench/support.js';
import { runUpdateStorm } from '../../../bench/update-storm.js';
import { sharedKubeConfig } from '../../support/cluster.js';

const target: BenchTarget = {
  kubeConfig: sharedKubeConfig(),
  kubeconfigPath: process.env.KONDUCTOR_TEST_KUBECONFIG!,
  framework: 'src',
};
const run = randomBytes(3).toString('hex');

/** One JSON line's worth: a scenario name, the core count, and every figure a finite number (or a flag/string). */
function expectWellFormed(line: Figures, scenario: string, figures: readonly string[]): void {
  expect(JSON.parse(JSON.stringify(line))).toEqual(line);
  expect(line.scenario).toBe(scenario);
  expect(line.cores).toBe(cpus().length);
  for (const key of figures) {
    const value = line[key];
    if (!(typeof value === 'number' && Number.isFinite(value) && value >= 0))
      throw new Error(`${scenario}: ${key} is ${JSON.stringify(value)}, not a finite number`);
  }
}

describe('benchmark smoke', () => {
  it('catch-up, its ceiling, status storage and the naive baseline complete at N = 200', async () => {
    const lines = await runCatchUp(target, {
      objects: 200,
      concurrency: 16,
      naive: true,
      statusStorage: true,
      prefix: `smoke-${run}`,
      ceilingPointSeconds: 1,
      ceilingPointObjects: 50,
    });
    expect(lines.map((line) => line.scenario)).toEqual([
      'catch-up',
      'ceiling',
      'catch-up-status',
      'catch-up-naive',
    ]);
    expectWellFormed(lines[0]!, 'catch-up', [
      'objects',
      'seconds',
      'objectsPerSecond',
      'peakRssMb',
      'apiWritesPerObject',
    ]);
    expectWellFormed(lines[1]!, 'ceiling', [
      'objectsPerSecond',
      'catchUpRatioSameWrites',
      'catchUpRatioOneWrite',
      'oneWriteObjectsPerSecond',
      'twoWritesObjectsPerSecond',
      'oneWriteWatchedObjectsPerSecond',
      'sameWritesWatchedObjectsPerSecond',
    ]);
    // The sweep: objects/s at every concurrency, for 1 and 2 writes per object, each write a real change.
    for (const sweep of ['oneWriteSweep', 'twoWritesSweep'])
      expect(Object.keys(lines[1]![sweep] as object)).toEqual(['16', '64', '128', '256']);
    expect(lines[1]!.unchangedWrites).toBe(0);
    expectWellFormed(lines[2]!, 'catch-up-status', [
      'objects',
      'seconds',
      'objectsPerSecond',
      'apiWritesPerObject',
      'speedRatioToAnnotations',
      'catchUpRatioOneWrite',
    ]);
    expect(lines[2]!.apiWritesPerObject).toBe(1); // the bookkeeping rides in the handler's status PATCH
    expectWellFormed(lines[3]!, 'catch-up-naive', [
      'seconds',
      'objectsPerSecond',
      'peakRssMb',
      'apiWritesPerObject',
      'ceilingRatio',
      'konductorSpeedRatio',
      'konductorRssRatio',
    ]);
  }, 120_000); // two operators' catch-ups and eight ceiling sweep points, on a machine that may be busy

  it.each(['konductor', 'naive'] as const)(
    'steady load completes for %s (50/s for 2 s)',
    async (operator) => {
      const line = await runSteadyLoad(target, {
        operator,
        rate: 50,
        seconds: 2,
        concurrency: 16,
        namespace: `smoke-${run}-steady-${operator}`,
      });
      expectWellFormed(line, operator === 'naive' ? 'steady-load-naive' : 'steady-load', [
        'objects',
        'achievedRate',
        'createToHandlerMsP50',
        'createToHandlerMsP99',
        'createToStatusMsP50',
        'createToStatusMsP99',
        'peakRssMb',
      ]);
      expect(line.objects).toBe(100);
    },
    60_000,
  );

  it('steady load with status storage completes at 1 API write per object (50/s for 2 s)', async () => {
    const line = await runSteadyLoad(target, {
      operator: 'konductor',
      storage: 'status',
      rate: 50,
      seconds: 2,
      concurrency: 16,
      namespace: `smoke-${run}-steady-status`,
    });
    expectWellFormed(line, 'steady-load-status', [
      'objects',
      'createToHandlerMsP99',
      'createToStatusMsP99',
      'peakRssMb',
    ]);
    expect(line.apiWritesPerObject).toBe(1);
  }, 60_000);

  it('the update storm completes and ends on the last state (3 objects, 10 updates each)', async () => {
    const line = await runUpdateStorm(target, {
      objects: 3,
      updates: 10,
      concurrency: 16,
      namespace: `smoke-${run}-storm`,
      settleMs: 300,
    });
    expectWellFormed(line, 'update-storm', [
      'secondsToLastStateHandled',
      'handlerRunsPerObjectMean',
      'handlerRunsPerObjectMax',
      'peakRssMb',
    ]);
    expect(line.finalStateHandled).toBe(true);
  }, 60_000);
});
