import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, resolveKubectl } from '../../../src/testing/binaries.js';
import { runCommand } from '../../../src/testing/run-command.js';
import { runProgram, type KubectlRun } from '../../support/kubectl.js';
import { waitFor } from '../../support/wait-for.js';

export { waitFor };

// import.meta.dirname is undefined under jest's VM modules; import.meta.url is set.
const SCRIPTS = fileURLToPath(new URL('../../../scripts/cluster', import.meta.url));
const CLUSTER = join(SCRIPTS, 'cluster.sh');
const HOST_STATE = join(SCRIPTS, 'host-state.sh');

/** The node's state folder, chosen as scripts/cluster/lib.sh chooses it. */
export function stateDir(): string {
  return process.env.KONDUCTOR_CLUSTER_DIR ?? join(cacheRoot(), 'cluster');
}

/** What scripts/cluster/host-state.sh sees of the node on the host: compared before `up` and after `down`. */
export function hostState(env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync('bash', [HOST_STATE], { encoding: 'utf8', env });
}

/** How one cluster.sh run ended, and how long it took. */
export interface ScriptRun extends KubectlRun {
  seconds: number;
}

export interface ScriptOptions {
  /** Added to this process's environment. */
  env?: Record<string, string>;
  /** Runs it as nobody (uid and gid 65534, no groups). */
  asNobody?: boolean;
  timeoutMs?: number;
}

function command(
  args: readonly string[],
  options: ScriptOptions,
): { program: string; args: string[]; env: NodeJS.ProcessEnv } {
  const env = { ...process.env, ...options.env };
  if (options.asNobody)
    return {
      program: 'setpriv',
      args: ['--reuid=65534', '--regid=65534', '--clear-groups', 'bash', CLUSTER, ...args],
      env,
    };
  return { program: 'bash', args: [CLUSTER, ...args], env };
}

/** Runs `cluster.sh <args>` to its end (SIGKILL after `timeoutMs`, default 10 minutes). */
export function clusterScript(
  args: readonly string[],
  options: ScriptOptions = {},
): Promise<ScriptRun> {
  const { program, args: argv, env } = command(args, options);
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 600_000;
  return runCommand(program, argv, { env, timeoutMs }).then((run) => ({
    ...run,
    seconds: (Date.now() - started) / 1000,
  }));
}

/** `cluster.sh <args>` that must succeed; logs how long it took. */
export async function clusterScriptOk(
  args: readonly string[],
  options: ScriptOptions = {},
): Promise<ScriptRun> {
  const run = await clusterScript(args, options);
  if (run.code !== 0)
    throw new Error(
      `cluster.sh ${args.join(' ')} exited ${run.code}:\n${run.stderr.trim().split('\n').slice(-20).join('\n')}`,
    );
  process.stderr.write(`[e2e-harness] cluster.sh ${args.join(' ')}: ${run.seconds.toFixed(1)} s\n`);
  return run;
}

/**
 * Whether the process with this PID runs. A zombie does not: the node's processes are orphans, and the
 * init that adopts them may reap them only seconds after they exit.
 */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The PID the node recorded for one of its processes (pids/<name>), or undefined. */
export function recordedPid(name: string): number | undefined {
  const file = join(stateDir(), 'pids', name);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Whether the kubelet has made its Pod cgroups under the node's parent cgroup (in any hierarchy). */
function kubeletCgroupsMade(): boolean {
  const root = '/sys/fs/cgroup';
  const hierarchies = existsSync(root) ? readdirSync(root) : [];
  return (
    existsSync(join(root, 'konductor-node', 'kubepods')) ||
    hierarchies.some((h) => existsSync(join(root, h, 'konductor-node', 'kubepods')))
  );
}

/**
 * Starts `cluster.sh up` and SIGKILLs it, and only it, once the node's kube-apiserver, containerd and
 * kubelet run and the kubelet has made its cgroups: the node's processes stay, as a crashed harness
 * leaves them. Returns the PIDs the node recorded, all still running.
 */
export async function crashUpMidway(): Promise<Map<string, number>> {
  // A file rather than pipes: the killed script's children (a sleep, a kubectl) outlive it and keep
  // what they inherited; a pipe would keep this process waiting on them.
  const logDir = mkdtempSync(join(tmpdir(), 'konductor-crashed-up-'));
  const logFile = join(logDir, 'up.log');
  const fd = openSync(logFile, 'w');
  const { program, args, env } = command(['up'], {});
  const started = Date.now();
  const child = spawn(program, args, { env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let exit: string | undefined;
  const exited = new Promise<void>((resolvePromise) =>
    child.once('exit', (code, signal) => {
      exit = `code ${code}, signal ${signal}`;
      resolvePromise();
    }),
  );
  try {
    await waitFor(
      () => {
        if (exit !== undefined)
          throw new Error(
            `cluster.sh up ended (${exit}) before it was killed:\n${readFileSync(logFile, 'utf8')}`,
          );
        return (
          ['kube-apiserver', 'containerd', 'kubelet'].every(
            (name) => recordedPid(name) !== undefined,
          ) && kubeletCgroupsMade()
        );
      },
      {
        what: 'kube-apiserver, containerd and the kubelet (with its cgroups) started by cluster.sh up',
        timeoutMs: 240_000,
        intervalMs: 100,
      },
    );
    child.kill('SIGKILL');
    await exited;
    process.stderr.write(
      `[e2e-harness] cluster.sh up killed after ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
  } finally {
    if (exit === undefined) child.kill('SIGKILL');
    rmSync(logDir, { recursive: true, force: true });
  }
  const pids = new Map<string, number>();
  for (const name of ['etcd', 'kube-apiserver', 'containerd', 'kubelet', 'sysctl-guard']) {
    const pid = recordedPid(name);
    if (pid !== undefined) pids.set(name, pid);
  }
  return pids;
}

/** kubectl against the node `up` started, as a user types it (`stdin` for `apply -f -`). */
export function kubectl(args: readonly string[], stdin = ''): Promise<KubectlRun> {
  return runProgram(
    resolveKubectl(),
    ['--kubeconfig', join(stateDir(), 'kubeconfig'), ...args],
    stdin,
  );
}
