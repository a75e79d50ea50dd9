// Jest loads global setup with Node's own resolver (no moduleNameMapper), so this file is plain
// ESM and imports the TypeScript sources through tsx.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tsImport } from 'tsx/esm/api';

/** Starts the one control plane all integration test files share; workers find it through the environment. */
export default async function globalSetup() {
  const { TestControlPlane } = await tsImport('../../src/testing/index.ts', import.meta.url);
  const plane = await TestControlPlane.start();
  process.env.KONDUCTOR_TEST_KUBECONFIG = plane.kubeconfigPath;
  // Chaos scenarios append their figures here; the teardown prints the summary line.
  process.env.KONDUCTOR_CHAOS_RECORD = join(tmpdir(), `konductor-chaos-${process.pid}.jsonl`);
  globalThis.__konductorControlPlane = plane;
}
