import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { Etcd3 } from 'etcd3';
import { ApiClient, type KubeObject } from '../../../src/framework/index.js';
import { EtcdPodRunner, LoopbackAddresses } from '../../support/simulated-kubelet/index.js';
import { waitFor } from '../../support/wait-for.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';

interface ContainerStatus {
  ready?: boolean;
  restartCount?: number;
  started?: boolean;
  state?: { running?: { startedAt?: string }; terminated?: { exitCode?: number; reason?: string } };
}

interface Pod extends KubeObject {
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: ContainerStatus[];
  };
}

let kc: KubeConfig;
let api: ApiClient;
let namespace: string;
let addresses: LoopbackAddresses;
let runner: EtcdPodRunner;

beforeAll(async () => {
  kc = sharedKubeConfig();
  api = new ApiClient(kc);
  namespace = await uniqueNamespace(kc, 'etcd-pods');
  addresses = new LoopbackAddresses();
  // One namespace: other test files may run pod runners on the same control plane.
  runner = new EtcdPodRunner({ kubeConfig: kc, addresses, namespace });
  await runner.start();
});

afterAll(async () => {
  await runner?.stop();
  api?.close();
});

const podsPath = (): string => `/api/v1/namespaces/${namespace}/pods`;

/** A fresh member name of `cluster`, as the operator makes them. */
function memberName(cluster = 'demo'): string {
  return `${cluster}-${randomBytes(5).toString('hex')}`;
}

/** A single-member etcd Pod like the handlers create, on loopback URLs. */
async function createEtcdPod(
  member: string,
  options: { cluster?: string; initContainers?: unknown[]; readinessProbe?: unknown } = {},
): Promise<{ clientURL: string }> {
  const cluster = options.cluster ?? 'demo';
  const urls = addresses.member(namespace, cluster, member);
  await api.request('POST', podsPath(), {
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: member,
        labels: { app: 'etcd', etcd_cluster: cluster, etcd_node: member },
        annotations: { 'etcd.version': '3.4.23' },
      },
      spec: {
        restartPolicy: 'Never',
        initContainers: options.initContainers ?? [],
        containers: [
          {
            name: 'etcd',
            image: 'quay.io/coreos/etcd:v3.4.23',
            command: [
              '/usr/local/bin/etcd',
              '--data-dir=/var/etcd/data',
              `--name=${member}`,
              `--initial-advertise-peer-urls=${urls.peerURL}`,
              `--listen-peer-urls=${urls.listenPeerURL}`,
              `--listen-client-urls=${urls.listenClientURL}`,
              `--advertise-client-urls=${urls.clientURL}`,
              `--initial-cluster=${member}=${urls.peerURL}`,
              '--initial-cluster-state=new',
              '--initial-cluster-token=t',
            ],
            volumeMounts: [{ name: 'etcd-data', mountPath: '/var/etcd' }],
            ...(options.readinessProbe ? { readinessProbe: options.readinessProbe } : {}),
          },
        ],
        volumes: [{ name: 'etcd-data', emptyDir: {} }],
      },
    },
  });
  return { clientURL: urls.clientURL };
}

function readPod(name: string): Promise<Pod> {
  return api.request<Pod>('GET', `${podsPath()}/${name}`);
}

function isReady(pod: Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

async function waitForPod(
  name: string,
  what: string,
  test: (pod: Pod) => boolean,
  timeoutMs = 20_000,
): Promise<Pod> {
  const pod = await waitFor(
    async () => {
      const pod = await readPod(name);
      return test(pod) ? pod : undefined;
    },
    { what: `pod ${name} ${what}`, timeoutMs, intervalMs: 100 },
  );
  return pod!; // waitFor returns only a truthy value
}

/** The HTTP status of `<clientURL>/health`, or 0 when nothing answers. */
async function health(clientURL: string): Promise<number> {
  try {
    const response = await fetch(`${clientURL}/health`, { signal: AbortSignal.timeout(2_000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

function processOf(name: string): ReturnType<EtcdPodRunner['processes']>[number] | undefined {
  return runner.processes().find((p) => p.namespace === namespace && p.pod === name);
}

it('runs a new Pod until it is Running and Ready, with etcd answering on its client URL', async () => {
  const member = memberName();
  const { clientURL } = await createEtcdPod(member);

  const pod = await waitForPod(member, 'to be Ready', isReady);

  expect(pod.status?.phase).toBe('Running');
  expect(pod.status?.podIP).toBe('127.0.0.1');
  expect(pod.status?.containerStatuses?.[0]).toMatchObject({
    ready: true,
    started: true,
    restartCount: 0,
    state: { running: {} },
  });
  expect(await health(clientURL)).toBe(200);
  expect(processOf(member)?.pid).toBeGreaterThan(0);
});

/** When the Pod's Ready condition last changed. */
function readyChangedAt(pod: Pod): string | undefined {
  return (
    pod.status?.conditions as { type: string; lastTransitionTime?: string }[] | undefined
  )?.find((c) => c.type === 'Ready')?.lastTransitionTime;
}

/** Freezes the member's etcd (SIGSTOP) for `ms`, so its `/health` probes time out, then lets it go on. */
async function freeze(member: string, ms: number): Promise<void> {
  const pid = processOf(member)!.pid;
  process.kill(pid, 'SIGSTOP');
  try {
    await new Promise((resolve) => setTimeout(resolve, ms));
  } finally {
    process.kill(pid, 'SIGCONT');
  }
}

it("keeps a Ready member Ready through fewer failed probes in a row than its readinessProbe's failureThreshold (default 3)", async () => {
  const member = memberName();
  await createEtcdPod(member);
  const before = readyChangedAt(await waitForPod(member, 'to be Ready', isReady));

  // Probes come a second apart and wait a second for an answer: a 3 s freeze fails one or two in a row.
  await freeze(member, 3_000);

  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const after = await readPod(member);
  expect([isReady(after), readyChangedAt(after)]).toEqual([true, before]);
});

it('reports a member not Ready once as many probes in a row fail as its readinessProbe says, and Ready again when it answers', async () => {
  const member = memberName();
  await createEtcdPod(member, {
    readinessProbe: { exec: { command: ['etcdctl', 'endpoint', 'health'] }, failureThreshold: 1 },
  });
  await waitForPod(member, 'to be Ready', isReady);

  const frozen = freeze(member, 3_000);
  await waitForPod(member, 'to be not Ready while frozen', (pod) => !isReady(pod), 5_000);
  await frozen;

  await waitForPod(member, 'to be Ready again', isReady);
});

it('marks the Pod Failed when its process dies', async () => {
  const member = memberName();
  await createEtcdPod(member);
  await waitForPod(member, 'to be Running', (pod) => pod.status?.phase === 'Running');

  expect(runner.kill(namespace, member)).toBe(true);

  const pod = await waitForPod(member, 'to be Failed', (pod) => pod.status?.phase === 'Failed');
  expect(isReady(pod)).toBe(false);
  expect(pod.status?.containerStatuses?.[0]?.state?.terminated).toMatchObject({
    exitCode: 137,
    reason: 'Error',
  });
  expect(processOf(member)).toBeUndefined();
});

it('stops the process and removes its folder when the Pod is deleted', async () => {
  const member = memberName();
  const { clientURL } = await createEtcdPod(member);
  await waitForPod(member, 'to be Ready', isReady);
  const dir = processOf(member)!.dataDir;
  expect(existsSync(dir)).toBe(true);

  await api.request('DELETE', `${podsPath()}/${member}`);

  await waitFor(async () => (await health(clientURL)) === 0 && !existsSync(dir), {
    what: `etcd of ${member} to stop and its folder to go`,
  });
  expect(processOf(member)).toBeUndefined();
});

it('marks the Pod Failed with the message of an init container that exits non-zero', async () => {
  const member = memberName();
  const { clientURL } = await createEtcdPod(member, {
    initContainers: [
      {
        name: 'check-dns',
        image: 'busybox:1.28',
        command: ['sh', '-c', 'echo "cannot resolve the member" >&2; exit 3'],
      },
    ],
  });

  const pod = await waitForPod(member, 'to be Failed', (pod) => pod.status?.phase === 'Failed');

  expect(pod.status?.message).toContain('init container check-dns exited with code 3');
  expect(pod.status?.message).toContain('cannot resolve the member');
  expect(processOf(member)).toBeUndefined();
  expect(await health(clientURL)).toBe(0);
});

it('marks Failed, as unrunnable, a Pod whose init container uses /var/etcd without mounting it: a kubelet would give it an empty folder of its own', async () => {
  const member = memberName();
  await createEtcdPod(member, {
    initContainers: [
      {
        name: 'fetch-backup',
        image: 'busybox:1.36',
        command: ['wget', '-q', '-O', '/var/etcd/latest.backup', 'http://127.0.0.1:9/x'],
      },
    ],
  });

  const pod = await waitForPod(member, 'to be Failed', (pod) => pod.status?.phase === 'Failed');

  expect(pod.status?.reason).toBe('Unrunnable');
  expect(pod.status?.message).toContain(
    'spec.initContainers[0] (fetch-backup) uses /var/etcd without mounting it',
  );
  expect(processOf(member)).toBeUndefined();
});

it('restarts the process in place, keeping its data, when the image changes', async () => {
  const member = memberName();
  const { clientURL } = await createEtcdPod(member);
  await waitForPod(member, 'to be Ready', isReady);
  const before = processOf(member)!;
  const writer = new Etcd3({ hosts: clientURL });
  try {
    await writer.put('upgrade-key').value('kept');
  } finally {
    writer.close();
  }

  await api.request('PATCH', `${podsPath()}/${member}`, {
    contentType: 'application/json-patch+json',
    body: [
      { op: 'replace', path: '/spec/containers/0/image', value: 'quay.io/coreos/etcd:v3.4.24' },
      { op: 'replace', path: '/metadata/annotations/etcd.version', value: '3.4.24' },
    ],
  });

  const pod = await waitForPod(
    member,
    'to be Ready after the restart',
    (pod) => isReady(pod) && pod.status?.containerStatuses?.[0]?.restartCount === 1,
  );
  expect(pod.status?.phase).toBe('Running');
  const after = processOf(member)!;
  expect(after.pid).not.toBe(before.pid);
  expect(after.dataDir).toBe(before.dataDir);
  const reader = new Etcd3({ hosts: clientURL });
  try {
    expect(await reader.get('upgrade-key').string()).toBe('kept');
  } finally {
    reader.close();
  }
});

it("resolves the cluster's client Service to the members it runs", async () => {
  const member = memberName('svc');
  const { clientURL } = await createEtcdPod(member, { cluster: 'svc' });
  await waitForPod(member, 'to be Ready', isReady);

  expect(addresses.endpoints(namespace, 'http://svc-client:2379')).toEqual([clientURL]);
  expect(addresses.endpoints(namespace, `svc-client.${namespace}.svc:2379`)).toEqual([clientURL]);
  expect(
    addresses.memberName(namespace, 'svc', addresses.member(namespace, 'svc', member).peerURL),
  ).toBe(member);

  await api.request('DELETE', `${podsPath()}/${member}`);
  await waitFor(() => addresses.endpoints(namespace, 'http://svc-client:2379').length === 0, {
    what: `svc-client to resolve to no member`,
  });
  expect(processOf(member)).toBeUndefined();
});
