import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const hostState = fileURLToPath(new URL('../../../scripts/cluster/host-state.sh', import.meta.url));

/** Stops the shared node; fails the run if the host is not as the setup found it. */
export default async function globalTeardown() {
  const cluster = globalThis.__konductorNodeCluster;
  if (!cluster) return;
  const started = Date.now();
  await cluster.stop();
  process.stderr.write(
    `[e2e] local node down in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  const after = execFileSync('bash', [hostState], { encoding: 'utf8' });
  const before = process.env.KONDUCTOR_E2E_HOST_BEFORE ?? '';
  if (after !== before) {
    throw new Error(
      `the host is not as the local node found it.\n--- before up\n${before}\n--- after down\n${after}`,
    );
  }
  process.stderr.write(
    '[e2e] host as found: no process, mount, cgroup, namespace, link, route, iptables rule or kernel setting left\n',
  );
}
