// Jest loads global setup with Node's own resolver, so this file is plain ESM and imports the
// TypeScript sources through tsx.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';

const hostState = fileURLToPath(new URL('../../../scripts/cluster/host-state.sh', import.meta.url));

/**
 * Records what the host looks like, then starts the one local node the e2e specs share; its kubeconfig
 * path is in KONDUCTOR_E2E_KUBECONFIG. The teardown stops it and checks the host is as recorded. With
 * KONDUCTOR_E2E_KUBECONFIG already set, the specs run on that node and it is left running.
 */
export default async function globalSetup() {
  // A node someone started (npm run cluster -- up; export KONDUCTOR_E2E_KUBECONFIG=...): use it, leave it up.
  if (process.env.KONDUCTOR_E2E_KUBECONFIG) return;
  process.env.KONDUCTOR_E2E_HOST_BEFORE = execFileSync('bash', [hostState], { encoding: 'utf8' });
  const { NodeCluster } = await tsImport('../../../src/testing/index.ts', import.meta.url);
  const started = Date.now();
  const cluster = await NodeCluster.start();
  process.stderr.write(
    `\n[e2e] local node Ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  globalThis.__konductorNodeCluster = cluster;
  process.env.KONDUCTOR_E2E_KUBECONFIG = cluster.kubeconfigPath;
}
