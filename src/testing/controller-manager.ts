import { join } from 'node:path';
import { ManagedProcess } from './managed-process.js';
import { readinessCheck } from './probe.js';

/** What a kube-controller-manager needs from the control plane it runs against. */
export interface ControllerManagerSetup {
  /** The kube-controller-manager binary. */
  binary: string;
  /** The plane's folder: the log goes there, and its reaper kills the process should the test runner die. */
  dir: string;
  /** A kubeconfig file with an identity allowed everything (the plane's admin). */
  kubeconfigPath: string;
  /** The private half of the key pair the API server verifies ServiceAccount tokens with. */
  serviceAccountPrivateKey: string;
  /** The CA that signed the API server's serving certificate; put into every ServiceAccount token Secret. */
  rootCaFile: string;
  /** The API server's URL and an admin token, to tell when the controllers run. */
  server: string;
  adminToken: string;
}

/**
 * Every controller except those that need nodes or a cloud provider, which a test plane has neither of:
 * without a kubelet there are no Node objects to allocate CIDRs to or watch the health of, and no cloud
 * to program routes or load balancers in.
 */
export const TEST_PLANE_CONTROLLERS =
  '*,-nodeipam,-nodelifecycle,-cloud-node-lifecycle,-route,-service';

/** The flags the controller manager runs with on a test control plane. */
export function controllerManagerArgs(
  setup: Pick<ControllerManagerSetup, 'kubeconfigPath' | 'serviceAccountPrivateKey' | 'rootCaFile'>,
): string[] {
  return [
    `--kubeconfig=${setup.kubeconfigPath}`,
    // The tokens controller signs ServiceAccount token Secrets with the API server's key, so they authenticate.
    `--service-account-private-key-file=${setup.serviceAccountPrivateKey}`,
    `--root-ca-file=${setup.rootCaFile}`,
    // Each controller acts as its own ServiceAccount, as in a cluster: RBAC denials show up as they would there.
    '--use-service-account-credentials=true',
    `--controllers=${TEST_PLANE_CONTROLLERS}`,
    // A claim made before its volume binds at the binder's next pass: every 2 s, not 15, keeps a spec
    // that binds a volume short on a busy machine.
    '--pvclaimbinder-sync-period=2s',
    // One controller manager per plane: leader election would only add a Lease and a delay.
    '--leader-elect=false',
    // No serving ports: nothing scrapes it, and free ports stay free for the tests.
    '--port=0',
    '--secure-port=0',
  ];
}

/**
 * The path of the probe that tells the controllers run: the `default` ServiceAccount of the `default`
 * namespace, which the serviceaccount controller creates once its caches have synced.
 */
const READY_PATH = '/api/v1/namespaces/default/serviceaccounts/default';

/**
 * kube-controller-manager as a managed process of a test control plane: garbage collection of owned
 * objects, namespace deletion, the workload controllers (Deployments get ReplicaSets and Pod objects;
 * no Pod ever runs, as there is no kubelet), ServiceAccounts and their token Secrets.
 */
export class ControllerManager {
  readonly process: ManagedProcess;

  constructor(private readonly setup: ControllerManagerSetup) {
    this.process = new ManagedProcess(
      'kube-controller-manager',
      setup.binary,
      controllerManagerArgs(setup),
      join(setup.dir, 'kube-controller-manager.log'),
      setup.dir,
    );
  }

  /**
   * Starts it and resolves once its controllers run (the `default` ServiceAccount exists). After a
   * restart that probe answers at once; the controllers catch up with what changed meanwhile within seconds.
   */
  async start(timeoutMs: number): Promise<void> {
    await this.process.start(
      readinessCheck(`${this.setup.server}${READY_PATH}`, this.setup.adminToken),
      timeoutMs,
    );
  }

  /** Stops it (SIGTERM, then SIGKILL after `graceMs`). Objects stay; nothing acts on them until it starts again. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs?: number): Promise<void> {
    await this.process.stop(signal, graceMs);
  }
}
