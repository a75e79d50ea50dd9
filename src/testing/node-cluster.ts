import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { runCommand, type CommandResult } from './run-command.js';

export type { CommandResult };

/** Options of {@link NodeCluster.start}. */
export interface NodeClusterOptions {
  /** The loopback port the host reaches the API server on. Default 16443 (`KONDUCTOR_CLUSTER_PORT`). */
  port?: number;
  /** Where the node keeps its state. Default `~/.cache/konductor/cluster` (`KONDUCTOR_CLUSTER_DIR`). */
  stateDir?: string;
}

const SCRIPTS = resolve(dirname(fileURLToPath(import.meta.url)), '../../scripts');

/**
 * A one-node Kubernetes cluster on this machine: etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler, kubelet with containerd and runc, kube-proxy and a DNS stand-in, all inside a network
 * namespace of their own (`scripts/cluster/cluster.sh`, which `npm run cluster` also runs). Pods run
 * for real; images come from `scripts/images/images.mjs` (no registry is ever contacted). Needs root
 * and what `scripts/provision.sh` installs. One per machine: `start` takes down a node a crashed run
 * left behind, and `stop` puts the host back as it was.
 *
 * @example
 * ```ts
 * const cluster = await NodeCluster.start();
 * await cluster.loadImage('/path/to/my-operator', 'my-operator:0.1.0');
 * const kc = cluster.kubeConfig();
 * // ... apply manifests, assert on Pods and objects ...
 * await cluster.stop();
 * ```
 */
export class NodeCluster {
  private constructor(
    /** The admin kubeconfig file (server `https://127.0.0.1:<port>`). */
    readonly kubeconfigPath: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Starts the node (about 35 s with images cached) and waits until it is Ready. */
  static async start(options: NodeClusterOptions = {}): Promise<NodeCluster> {
    const env = environment(options);
    const up = await runScript(['up'], env, 600_000);
    if (up.code !== 0)
      throw new Error(
        `the local node did not start (scripts/cluster/cluster.sh up exited ${up.code}):\n${tail(up.stderr)}`,
      );
    const path = up.stdout.trim().split('\n').at(-1) ?? '';
    if (!existsSync(path))
      throw new Error(
        `scripts/cluster/cluster.sh up printed no kubeconfig path:\n${tail(up.stderr)}`,
      );
    return new NodeCluster(path, env);
  }

  /**
   * The node another process started (a jest global setup, `npm run cluster -- up`), from its
   * kubeconfig path; `stop` takes it down as if this process had started it.
   */
  static attach(kubeconfigPath: string, options: NodeClusterOptions = {}): NodeCluster {
    if (!existsSync(kubeconfigPath))
      throw new Error(
        `${kubeconfigPath} does not exist: is the local node up (npm run cluster -- up)?`,
      );
    return new NodeCluster(kubeconfigPath, environment(options));
  }

  /** A KubeConfig for the cluster's admin. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    return kc;
  }

  /**
   * Builds a project's image from its Dockerfile (without a container engine; see
   * `scripts/images/images.mjs`) and loads it into the node, e.g. `loadImage(dir, 'my-operator:0.1.0')`.
   */
  async loadImage(projectDir: string, tag: string): Promise<void> {
    const run = await runScript(['load', '--project', projectDir, '--tag', tag], this.env, 600_000);
    if (run.code !== 0)
      throw new Error(`could not build and load ${tag} from ${projectDir}:\n${tail(run.stderr)}`);
  }

  /**
   * Builds (or finds cached) images `scripts/images/images.mjs` knows by name and loads them into the
   * node, e.g. `loadBuiltImages(['prometheus', 'prometheus-config-reloader'])`; `up` loads only pause,
   * busybox, etcd and the operator.
   */
  async loadBuiltImages(names: readonly string[]): Promise<void> {
    if (names.length === 0 || names.some((name) => !/^[a-z][a-z0-9-]*$/.test(name)))
      throw new Error(
        `loadBuiltImages: expected image names such as 'prometheus', got ${JSON.stringify(names)}`,
      );
    const run = await runScript(['load', '--only', names.join(',')], this.env, 600_000);
    if (run.code !== 0)
      throw new Error(
        `could not build and load the images ${names.join(', ')}:\n${tail(run.stderr)}`,
      );
  }

  /**
   * Runs a program inside the node's network namespace, where Pod and Service addresses are reachable
   * (they exist nowhere else), e.g. `runInNode('curl', ['-s', 'http://10.244.0.12:8080/healthz'])`.
   */
  runInNode(program: string, args: readonly string[], timeoutMs = 30_000): Promise<CommandResult> {
    return runCommand('nsenter', ['--net=/run/netns/konductor-node', '--', program, ...args], {
      env: this.env,
      timeoutMs,
    });
  }

  /** The PID of one of the node's processes (`kube-apiserver`, `kubelet`, `containerd`, ...). */
  pidOf(
    component:
      | 'kube-apiserver'
      | 'kubelet'
      | 'containerd'
      | 'etcd'
      | 'kube-proxy'
      | 'kube-scheduler'
      | 'kube-controller-manager',
  ): number {
    const file = join(dirname(this.kubeconfigPath), 'pids', component);
    const pid = existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : NaN;
    if (!Number.isInteger(pid) || pid <= 0)
      throw new Error(`the local node has no running ${component} (no PID in ${file})`);
    return pid;
  }

  /** Stops the node and undoes everything it changed on the host. */
  async stop(): Promise<void> {
    const down = await runScript(['down'], this.env, 300_000);
    if (down.code !== 0)
      throw new Error(`scripts/cluster/cluster.sh down exited ${down.code}:\n${tail(down.stderr)}`);
  }
}

function environment(options: NodeClusterOptions): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (options.port !== undefined) {
    if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65535)
      throw new Error(`NodeCluster port ${options.port} is not a TCP port`);
    env.KONDUCTOR_CLUSTER_PORT = String(options.port);
  }
  if (options.stateDir !== undefined) env.KONDUCTOR_CLUSTER_DIR = resolve(options.stateDir);
  return env;
}

function runScript(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<CommandResult> {
  return runCommand('bash', [join(SCRIPTS, 'cluster', 'cluster.sh'), ...args], { env, timeoutMs });
}

function tail(text: string): string {
  return text.trim().split('\n').slice(-15).join('\n');
}
