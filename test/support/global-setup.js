// Jest loads global setup with Node's own resolver (no moduleNameMapper), so this file is plain
// ESM and imports the TypeScript sources through tsx.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tsImport } from 'tsx/esm/api';

/**
 * Starts one control plane per jest worker: files in different workers run at the same time, and
 * many integration specs count requests, time latencies or wait for quiet, which another file's
 * load on the same API server would disturb. Worker N (JEST_WORKER_ID) finds its plane's kubeconfig
 * in KONDUCTOR_TEST_KUBECONFIG_<N>; test/support/worker-plane.ts sets KONDUCTOR_TEST_KUBECONFIG from it.
 */
export default async function globalSetup(globalConfig) {
  // Both integration projects name this file: one set of planes serves a run that selects both.
  if (globalThis.__konductorControlPlanes) return;
  const { TestControlPlane } = await tsImport('../../src/testing/index.ts', import.meta.url);
  const workers = Math.max(1, Math.min(4, Number(globalConfig?.maxWorkers) || 1));
  const planes = [];
  globalThis.__konductorControlPlanes = planes;
  // One after another: each picks free ports, and two starts at once could be handed the same one.
  for (let worker = 1; worker <= workers; worker++) {
    const plane = await TestControlPlane.start();
    planes.push(plane);
    process.env[`KONDUCTOR_TEST_KUBECONFIG_${worker}`] = plane.kubeconfigPath;
  }
  process.env.KONDUCTOR_TEST_KUBECONFIG = planes[0].kubeconfigPath;
  // Chaos scenarios append their figures here; the teardown prints the summary line.
  process.env.KONDUCTOR_CHAOS_RECORD = join(tmpdir(), `konductor-chaos-${process.pid}.jsonl`);
}
