import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  resolveBinaries,
  resolveControllerManager,
  type ControlPlaneBinaries,
} from './binaries.js';
import { ControllerManager } from './controller-manager.js';
import { writeCredentials, type Credentials } from './credentials.js';
import {
  kubeConfigForServiceAccount,
  kubeConfigWithToken,
  type ServiceAccountRef,
} from './identities.js';
import { ManagedProcess } from './managed-process.js';
import { freePort } from './ports.js';
import { readinessCheck } from './probe.js';
import { startReaper } from './process-reaper.js';
import { defaultBaseDir } from './scratch-dir.js';
import { writeWebhookClientIdentity, type WebhookClientIdentity } from './webhook-client.js';

/** Options for {@link TestControlPlane.start}. */
export interface ControlPlaneOptions {
  /**
   * Binary paths. By default each is found from its override (`KONDUCTOR_ETCD`,
   * `KONDUCTOR_KUBE_APISERVER`), `KUBEBUILDER_ASSETS`, the cache `scripts/provision.sh` fills, then `PATH`.
   */
  binaries?: Partial<ControlPlaneBinaries>;
  /** Extra kube-apiserver flags, appended after ours (a later flag wins). */
  apiServerArgs?: readonly string[];
  /**
   * How long each program may go without progress while starting (no new readiness answer, no new log
   * output) before the start fails. Default 30 s. A start that keeps progressing, as on a loaded
   * machine, may take ten times as long; the error then says what the readiness check last saw.
   */
  startTimeoutMs?: number;
  /** Parent folder of the temporary folder. Default: `/dev/shm` when writable (etcd's fsyncs cost nothing on tmpfs), else the OS temp folder. */
  baseDir?: string;
  /**
   * Also run kube-controller-manager, so the plane behaves like a cluster where the API server alone does
   * not: owned objects are garbage-collected after their owner is deleted, `DELETE namespace` empties the
   * namespace and completes, Deployments get ReplicaSets and Pod objects (never run: there is no
   * kubelet), namespaces get a `default` ServiceAccount. Node, route and service (load balancer)
   * controllers stay off. Default false: it adds about 6 s to the start and 85 MB of memory (measured here).
   *
   * Needs a kube-controller-manager binary (see `binaries.kubeControllerManager` for where it is
   * found); `scripts/provision.sh` builds it. Without one, start
   * fails at once with the command that provides it. It can also be started later with
   * {@link TestControlPlane.startControllerManager}.
   */
  controllerManager?: boolean;
}

const ADMIN_USER = 'konductor-admin';

/** A second API server on the same etcd; see {@link TestControlPlane.startPeerApiServer}. */
export interface PeerApiServer {
  /** The peer's base URL. */
  server: string;
  /** Admin identity on the peer. */
  kubeConfig(): KubeConfig;
  /** Stops the peer; the plane's own API server and etcd keep running. */
  stop(): Promise<void>;
}

/**
 * A real etcd and kube-apiserver on free loopback ports, in a temporary folder, with TLS serving,
 * token authentication and RBAC. By default no controller-manager or scheduler: like envtest, objects
 * are stored and served but nothing acts on Pods, namespaces' deletion or owner references. With
 * `controllerManager: true` a kube-controller-manager acts on those as in a cluster (no scheduler still).
 *
 * Every process and the folder are removed by {@link stop}, and by a detached reaper if the owning
 * process dies first (a killed or interrupted test run).
 */
export class TestControlPlane {
  /** Base URL of the API server, e.g. `https://127.0.0.1:41234`. */
  server = '';
  /** Path of a kubeconfig file for the admin identity (`system:masters`). */
  readonly kubeconfigPath: string;
  /**
   * The CA (PEM) of the client certificate the API server presents to admission webhooks (its
   * `--admission-control-config-file` gives it one for every host). Give it to the operator as
   * `webhooks.clientCA` (`--webhook-client-ca`) to accept admission requests from this API server
   * only. Also in the plane's folder as `webhook-client-ca.crt`, beside `kubeconfigPath`.
   */
  readonly webhookClientCA: string;
  private caData = '';
  private controllerManagerInstance: ControllerManager | undefined;

  private constructor(
    /** The plane's temporary folder: certificates, kubeconfigs, etcd's data and logs. */
    readonly dir: string,
    private readonly binaries: ControlPlaneBinaries,
    private readonly credentials: Credentials,
    /** The etcd process, for tests that stop or restart it. */
    readonly etcd: ManagedProcess,
    /** The kube-apiserver process, for tests that stop or restart it. */
    readonly apiServer: ManagedProcess,
    private readonly etcdClientUrl: string,
    private readonly extraArgs: readonly string[],
    private readonly startTimeoutMs: number,
    private readonly webhookClient: WebhookClientIdentity,
  ) {
    this.kubeconfigPath = join(dir, 'kubeconfig.json');
    this.webhookClientCA = webhookClient.ca;
  }

  /** Starts etcd and the API server; resolves once `/readyz` answers 200. */
  static async start(options: ControlPlaneOptions = {}): Promise<TestControlPlane> {
    const binaries: ControlPlaneBinaries = { ...resolveBinaries(), ...options.binaries };
    // Resolved before anything starts, so a missing binary fails at once with the way to get it.
    if (options.controllerManager && !binaries.kubeControllerManager)
      binaries.kubeControllerManager = resolveControllerManager();
    const dir = mkdtempSync(join(options.baseDir ?? defaultBaseDir(), 'konductor-cp-'));
    startReaper(dir);
    let plane: TestControlPlane | undefined;
    try {
      const credentials = writeCredentials(dir);
      const webhookClient = await writeWebhookClientIdentity(dir);
      const startTimeoutMs = options.startTimeoutMs ?? 30_000;
      const [etcdClient, etcdPeer, apiPort] = (await distinctFreePorts(3)) as [
        number,
        number,
        number,
      ];
      const etcdClientUrl = `http://127.0.0.1:${etcdClient}`;
      const etcdPeerUrl = `http://127.0.0.1:${etcdPeer}`;
      const etcd = new ManagedProcess(
        'etcd',
        binaries.etcd,
        [
          '--name=konductor-test',
          `--data-dir=${join(dir, 'etcd-data')}`,
          `--listen-client-urls=${etcdClientUrl}`,
          `--advertise-client-urls=${etcdClientUrl}`,
          `--listen-peer-urls=${etcdPeerUrl}`,
          `--initial-advertise-peer-urls=${etcdPeerUrl}`,
          `--initial-cluster=konductor-test=${etcdPeerUrl}`,
          '--log-level=warn',
          '--logger=zap',
        ],
        join(dir, 'etcd.log'),
        dir,
      );
      const certDir = join(dir, 'certs');
      mkdirSync(certDir);
      const extraArgs = options.apiServerArgs ?? [];
      const apiServer = new ManagedProcess(
        'kube-apiserver',
        binaries.kubeApiserver,
        apiServerArgs(etcdClientUrl, apiPort, certDir, credentials, webhookClient, extraArgs),
        join(dir, 'kube-apiserver.log'),
        dir,
      );
      plane = new TestControlPlane(
        dir,
        binaries,
        credentials,
        etcd,
        apiServer,
        etcdClientUrl,
        extraArgs,
        startTimeoutMs,
        webhookClient,
      );
      plane.server = `https://127.0.0.1:${apiPort}`;
      await plane.startEtcd();
      await plane.startApiServer();
      if (options.controllerManager) await plane.startControllerManager();
      return plane;
    } catch (error) {
      if (plane) await plane.stop();
      else rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Starts etcd (again), keeping its data folder. */
  async startEtcd(): Promise<void> {
    await this.etcd.start(readinessCheck(`${this.etcdClientUrl}/health`), this.startTimeoutMs);
  }

  /** Stops etcd, keeping its data. Use `signal: 'SIGKILL'` to simulate a crash. */
  async stopEtcd(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.etcd.stop(signal);
  }

  /** Starts the API server (again) on the same port, so clients reconnect to the same URL. */
  async startApiServer(): Promise<void> {
    await this.apiServer.start(
      readinessCheck(`${this.server}/readyz`, this.credentials.adminToken),
      this.startTimeoutMs,
    );
    if (!this.caData) {
      // The API server made a self-signed CA and serving cert in --cert-dir; trust that CA.
      this.caData = readFileSync(join(this.dir, 'certs', 'apiserver.crt')).toString('base64');
      writeFileSync(this.kubeconfigPath, this.kubeConfig().exportConfig());
    }
  }

  /** Stops the API server; etcd and its data stay. Use `signal: 'SIGKILL'` to simulate a crash. */
  async stopApiServer(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.apiServer.stop(signal);
  }

  /**
   * Starts kube-controller-manager (again) against the API server; resolves once its controllers run.
   * A plane started without `controllerManager: true` finds the binary now, failing with the command
   * that provides it when there is none.
   */
  async startControllerManager(): Promise<void> {
    if (!this.controllerManagerInstance) {
      this.binaries.kubeControllerManager ??= resolveControllerManager();
      this.controllerManagerInstance = new ControllerManager({
        binary: this.binaries.kubeControllerManager,
        dir: this.dir,
        kubeconfigPath: this.kubeconfigPath,
        serviceAccountPrivateKey: this.credentials.serviceAccountPrivateKey,
        rootCaFile: join(this.dir, 'certs', 'apiserver.crt'),
        server: this.server,
        adminToken: this.credentials.adminToken,
      });
    }
    await this.controllerManagerInstance.start(this.startTimeoutMs);
  }

  /**
   * Stops kube-controller-manager, as when it crashed or lost its lease: until it starts again nothing
   * collects garbage or finishes a namespace's deletion. Does nothing when it does not run.
   */
  async stopControllerManager(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.controllerManagerInstance?.stop(signal);
  }

  /** The kube-controller-manager process (its pid, log tail, signals), when the plane has started one. */
  get controllerManager(): ManagedProcess | undefined {
    return this.controllerManagerInstance?.process;
  }

  /** The admin identity (`system:masters`), as a fresh KubeConfig. */
  kubeConfig(): KubeConfig {
    return this.kubeConfigWithToken(ADMIN_USER, this.credentials.adminToken);
  }

  /** The admin bearer token, for raw HTTP calls such as scraping `/metrics`. */
  get adminToken(): string {
    return this.credentials.adminToken;
  }

  /** A KubeConfig acting as a ServiceAccount (created if missing); see {@link kubeConfigForServiceAccount}. */
  kubeConfigForServiceAccount(
    account: ServiceAccountRef,
    expirationSeconds = 3600,
  ): Promise<KubeConfig> {
    return kubeConfigForServiceAccount(this.kubeConfig(), account, expirationSeconds);
  }

  /**
   * Starts a second API server on another port, backed by the same etcd, as in an HA control plane.
   * Tests use it to change objects while the main API server is down.
   */
  async startPeerApiServer(): Promise<PeerApiServer> {
    const [port] = (await distinctFreePorts(1)) as [number];
    const certDir = join(this.dir, `certs-peer-${port}`);
    mkdirSync(certDir);
    const peer = new ManagedProcess(
      'kube-apiserver (peer)',
      this.binaries.kubeApiserver,
      apiServerArgs(
        this.etcdClientUrl,
        port,
        certDir,
        this.credentials,
        this.webhookClient,
        this.extraArgs,
      ),
      join(this.dir, `kube-apiserver-peer-${port}.log`),
      this.dir,
    );
    const server = `https://127.0.0.1:${port}`;
    await peer.start(
      readinessCheck(`${server}/readyz`, this.credentials.adminToken),
      this.startTimeoutMs,
    );
    const caData = readFileSync(join(certDir, 'apiserver.crt')).toString('base64');
    return {
      server,
      kubeConfig: () =>
        kubeConfigWithToken(
          { name: 'konductor-test-peer', server, caData },
          ADMIN_USER,
          this.credentials.adminToken,
        ),
      stop: () => peer.stop(),
    };
  }

  /** Stops everything and removes the temporary folder. Safe to call twice. */
  async stop(): Promise<void> {
    // The controller manager first: stopped after the API server, it would only log failed requests.
    await this.controllerManagerInstance?.stop('SIGTERM', 3_000);
    await this.apiServer.stop('SIGTERM', 3_000);
    await this.etcd.stop('SIGTERM', 3_000);
    if (existsSync(this.dir)) rmSync(this.dir, { recursive: true, force: true });
  }

  private kubeConfigWithToken(user: string, token: string): KubeConfig {
    return kubeConfigWithToken(
      { name: 'konductor-test', server: this.server, caData: this.caData },
      user,
      token,
    );
  }

  /** Versions of the binaries in use, for logs. */
  get binaryPaths(): Readonly<ControlPlaneBinaries> {
    return this.binaries;
  }
}

/** The flags of every API server of a control plane (the main one and peers). */
function apiServerArgs(
  etcdClientUrl: string,
  port: number,
  certDir: string,
  credentials: Credentials,
  webhookClient: WebhookClientIdentity,
  extraArgs: readonly string[],
): string[] {
  return [
    `--etcd-servers=${etcdClientUrl}`,
    `--secure-port=${port}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    '--insecure-port=0',
    `--cert-dir=${certDir}`,
    `--token-auth-file=${credentials.tokenFile}`,
    '--authorization-mode=RBAC',
    `--service-account-key-file=${credentials.serviceAccountPublicKey}`,
    `--service-account-signing-key-file=${credentials.serviceAccountPrivateKey}`,
    '--service-account-issuer=https://kubernetes.default.svc',
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged=true',
    // Without a controller manager (the default) nothing creates the `default` ServiceAccount, so its admission
    // check would reject every Pod; off with one too, so the API server behaves the same either way.
    '--disable-admission-plugins=ServiceAccount',
    // A client certificate for admission webhooks, so operators under test can accept this API server only.
    `--admission-control-config-file=${webhookClient.admissionConfigPath}`,
    '--profiling=false',
    ...extraArgs,
  ];
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}
