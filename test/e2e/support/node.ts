import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NodeCluster } from '../../../src/testing/index.js';
import { resolveKubectl } from '../../../src/testing/binaries.js';
import { runCommand } from '../../../src/testing/run-command.js';
import type { KubectlRun } from '../../support/kubectl.js';
import { waitFor } from '../../support/wait-for.js';

export { waitFor };

/** The repository root: specs apply its deploy/ and examples/ as a user would. */
export const REPO = fileURLToPath(new URL('../../..', import.meta.url));

/** The local node the e2e global setup started. */
export function localNode(): NodeCluster {
  const path = process.env.KONDUCTOR_E2E_KUBECONFIG;
  if (!path)
    throw new Error('KONDUCTOR_E2E_KUBECONFIG is not set: run the e2e specs with npm run test:e2e');
  return NodeCluster.attach(path);
}

/**
 * kubectl against the local node, as a user types it (`stdin` for `apply -f -`). Waits as long as the
 * command's own `--timeout` allows (a `delete --wait` of a namespace with finalizers takes tens of seconds).
 */
export function kubectl(args: readonly string[], stdin = ''): Promise<KubectlRun> {
  return runCommand(resolveKubectl(), ['--kubeconfig', localNode().kubeconfigPath, ...args], {
    stdin,
    timeoutMs: 300_000,
  });
}

/** kubectl that must succeed; returns its stdout. */
export async function kubectlOk(args: readonly string[], stdin = ''): Promise<string> {
  const run = await kubectl(args, stdin);
  if (run.code !== 0)
    throw new Error(`kubectl ${args.join(' ')} exited ${run.code}: ${run.stderr.trim()}`);
  return run.stdout;
}

/** A JSON object read with kubectl, or undefined when it does not exist. */
export async function getJson<T = Record<string, unknown>>(
  args: readonly string[],
): Promise<T | undefined> {
  const run = await kubectl(['get', ...args, '-o', 'json']);
  if (run.code !== 0) {
    if (/NotFound|not found/.test(run.stderr)) return undefined;
    throw new Error(`kubectl get ${args.join(' ')}: ${run.stderr.trim()}`);
  }
  return JSON.parse(run.stdout) as T;
}

/** Applies deploy/ as a user does and waits for the rollout; returns the seconds it took. */
export async function deployOperator(timeoutSeconds = 60): Promise<number> {
  const started = Date.now();
  await kubectlOk(['apply', '-f', resolve(REPO, 'deploy')]);
  await rolledOut(timeoutSeconds);
  return (Date.now() - started) / 1000;
}

/**
 * Waits for the operator's rollout and then until its admission webhooks answer: a new Pod is Ready
 * before kube-proxy routes the webhook Service to it, and meanwhile the API server's calls are
 * refused ("no route to host": a Service without endpoints), failing any EtcdCluster write.
 */
export async function rolledOut(timeoutSeconds = 60): Promise<void> {
  await kubectlOk([
    '-n',
    'konductor-system',
    'rollout',
    'status',
    'deploy/konductor',
    `--timeout=${timeoutSeconds}s`,
  ]);
  // A server-side dry run goes through admission and stores nothing.
  const probe =
    'apiVersion: etcd.database.coreos.com/v1beta2\nkind: EtcdCluster\nmetadata:\n  name: webhook-probe\n  namespace: default\nspec:\n  size: 1\n';
  let last = '';
  await waitFor(
    async () => {
      const run = await kubectl(['create', '--dry-run=server', '-o', 'name', '-f', '-'], probe);
      last = run.stderr.trim();
      return run.code === 0;
    },
    {
      what: "the operator's admission webhooks to answer a server-side dry run",
      timeoutMs: 60_000,
      intervalMs: 500,
    },
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; last answer: ${last}`, { cause: error });
  });
}

/** The running operator Pod(s) in konductor-system. */
export interface PodSummary {
  name: string;
  ip: string;
  ready: boolean;
  restarts: number;
  uid: string;
  deleting: boolean;
}

export async function operatorPods(): Promise<PodSummary[]> {
  type Pod = {
    metadata: { name: string; uid: string; deletionTimestamp?: string };
    status?: {
      podIP?: string;
      conditions?: { type: string; status: string }[];
      containerStatuses?: { restartCount: number }[];
    };
  };
  const list = await getJson<{ items: Pod[] }>([
    'pods',
    '-n',
    'konductor-system',
    '-l',
    'app.kubernetes.io/name=konductor',
  ]);
  return (list?.items ?? []).map((pod) => ({
    name: pod.metadata.name,
    uid: pod.metadata.uid,
    ip: pod.status?.podIP ?? '',
    ready: pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    restarts: pod.status?.containerStatuses?.[0]?.restartCount ?? 0,
    deleting: pod.metadata.deletionTimestamp !== undefined,
  }));
}

/** The holder of the operator's Lease. */
export async function leaseHolder(): Promise<string | undefined> {
  const lease = await getJson<{ spec?: { holderIdentity?: string } }>([
    'lease',
    '-n',
    'konductor-system',
    'konductor-leader',
  ]);
  return lease?.spec?.holderIdentity;
}

/**
 * SIGKILLs the process named `comm` (as /proc/<pid>/comm shows it) inside a Pod's containers, as an
 * OOM kill or a crash would; returns its PID.
 */
export function killProcessInPod(podUid: string, comm: string): number {
  const marker = `pod${podUid}`;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== comm) continue;
      if (!readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(marker)) continue;
      process.kill(Number(pid), 'SIGKILL');
      return Number(pid);
    } catch {
      // The process ended while being read.
    }
  }
  throw new Error(`no ${comm} process in the cgroups of Pod ${podUid}`);
}
