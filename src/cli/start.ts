// `npm start`: runs the bundled operators (src/handlers). With a kubeconfig (KUBECONFIG, ~/.kube/config
// or in-cluster) it runs against that cluster; without one it first brings up the embedded test
// control plane, installs crds/ and applies examples/, and prints how to point kubectl at it.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { createLogger, createOperator, type Operator, type Registry } from '../framework/index.js';
import { HealthServerError } from '../framework/runtime/health-server.js';
import {
  EtcdAdmission,
  EtcdBackups,
  EtcdClusters,
  EtcdIgnoredFields,
  EtcdRestores,
} from '../handlers/etcd/index.js';
// The demo is repository-only (never built or packed), so it may use the specs' simulated kubelet.
import { EtcdPodRunner, LoopbackAddresses } from '../../test/support/simulated-kubelet/index.js';
import {
  applyManifests,
  installCrds,
  readCrds,
  readManifests,
  TestControlPlane,
} from '../testing/index.js';
import { LoadError, loadHandlers } from './load-handlers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const crdDir = join(root, 'crds');
const examplesDir = join(root, 'examples');
const handlersDir = join(root, 'src', 'handlers');

/** Where `npm start` serves /healthz, /readyz and /metrics. */
const HEALTH_PORT = 8080;

function hasYaml(dir: string): boolean {
  return existsSync(dir) && readdirSync(dir).some((f) => /\.ya?ml$/.test(f));
}

function hasKubeconfig(): boolean {
  return (
    Boolean(process.env.KUBECONFIG) ||
    existsSync(join(homedir(), '.kube', 'config')) ||
    Boolean(process.env.KUBERNETES_SERVICE_HOST)
  );
}

async function main(): Promise<void> {
  const logger = createLogger();
  let plane: TestControlPlane | undefined;
  const kc = new KubeConfig();
  if (hasKubeconfig()) {
    kc.loadFromDefault();
    console.log(`konductor: using the cluster at ${kc.getCurrentCluster()?.server}`);
  } else {
    console.log(
      'konductor: no kubeconfig found; starting the embedded control plane (etcd + kube-apiserver)...',
    );
    plane = await TestControlPlane.start();
    kc.loadFromFile(plane.kubeconfigPath);
    if (hasYaml(crdDir)) await installCrds(kc, readCrds(crdDir));
    if (hasYaml(examplesDir)) await applyManifests(kc, readManifests(examplesDir));
    console.log(`konductor: control plane ready at ${plane.server}`);
    console.log(`konductor: point kubectl at it with:  export KUBECONFIG=${plane.kubeconfigPath}`);
  }
  let operator: Operator | undefined;
  let runner: EtcdPodRunner | undefined;
  let backupRoot: string | undefined;
  try {
    let registry: Registry;
    if (plane) {
      // No kubelet and no cluster DNS here: etcd member Pods run as local etcd processes on loopback
      // ports, and the etcd handlers are told those addresses instead of Pod DNS names.
      const addresses = new LoopbackAddresses();
      runner = new EtcdPodRunner({ kubeConfig: kc, addresses, logger });
      await runner.start();
      backupRoot = mkdtempSync(join(tmpdir(), 'konductor-etcd-backups-'));
      registry = await loadHandlers([join(handlersDir, 'prometheus')]);
      registry.addInstance(new EtcdClusters({ addresses }));
      registry.addInstance(new EtcdBackups({ addresses, localRoot: backupRoot }));
      registry.addInstance(
        new EtcdRestores({ localRoot: backupRoot, serve: { host: '127.0.0.1', port: 0 } }),
      );
      registry.addInstance(new EtcdIgnoredFields());
      registry.addInstance(new EtcdAdmission());
      console.log(
        `konductor: etcd members run as local processes; Local backups are written under ${backupRoot}`,
      );
    } else {
      registry = await loadHandlers([handlersDir]);
    }
    // The embedded API server reaches a webhook server on loopback; a real cluster's cannot, so there
    // the webhooks are left off (logged) rather than registered with an address that fails every write.
    const webhooks = plane
      ? { port: 0, host: '127.0.0.1', url: 'https://127.0.0.1' }
      : { enabled: false };
    const starting = createOperator({
      kubeConfig: kc,
      registry,
      logger,
      health: { port: HEALTH_PORT, host: '127.0.0.1' },
      webhooks,
    });
    // The port first: without it there are no probes and no metrics, so nothing starts.
    await starting.serveHealth();
    operator = starting.start();
    // A startup handler that fails for good stops the start: say why and leave nothing running behind.
    starting.ready.catch((error: unknown) => {
      console.error(`konductor: ${error instanceof Error ? error.message : String(error)}`);
      void shutdown(1);
    });
    console.log(
      `konductor: running ${registry.handlers.length} handlers from src/handlers; health and metrics on http://127.0.0.1:${HEALTH_PORT}`,
    );
  } catch (error) {
    if (error instanceof HealthServerError) {
      // npm start has no --health-port: say what to stop, and leave nothing running behind.
      console.error(
        `konductor: port ${HEALTH_PORT} on 127.0.0.1 is not free for the health server (${error.code ?? error.message}): stop what uses it, or run 'konductor run --health-port <port>'`,
      );
      await shutdown(1);
    }
    if (!(error instanceof LoadError)) throw error;
    console.log(`konductor: ${error.message}; the control plane stays up without an operator`);
  }
  console.log('konductor: press Ctrl-C to stop (processes and temporary files are removed).');
  let stopping = false;
  async function shutdown(code: number): Promise<never> {
    await operator?.stop(30_000);
    await runner?.stop();
    if (backupRoot) rmSync(backupRoot, { recursive: true, force: true });
    await plane?.stop();
    process.exit(code);
  }
  const stop = (): void => {
    if (stopping) process.exit(130);
    stopping = true;
    console.log('konductor: stopping...');
    void shutdown(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`konductor: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
