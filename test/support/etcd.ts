import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { Etcd3 } from 'etcd3';
import { ApiClient, silentLogger } from '../../src/framework/index.js';
import { EtcdBackups, EtcdClusters, EtcdRestores } from '../../src/handlers/etcd/index.js';
import { EtcdPodRunner, LoopbackAddresses } from './simulated-kubelet/index.js';
import { installCrds, readCrds, runOperator, type TestOperator } from '../../src/testing/index.js';
import { freePort } from '../../src/testing/ports.js';
import { waitFor } from './wait-for.js';

export const ETCD_API = 'etcd.database.coreos.com/v1beta2';
const run = promisify(execFile);

/** The etcd CRDs, installed once per control plane (installing again is harmless). */
export async function installEtcdCrds(kc: KubeConfig): Promise<void> {
  await installCrds(
    kc,
    readCrds(join(process.cwd(), 'crds')).filter(
      (crd) => crd.spec?.group === 'etcd.database.coreos.com',
    ),
  );
}

/** An etcd operator with its local pod runner, on one namespace of the shared control plane. */
export interface EtcdHarness {
  namespace: string;
  api: ApiClient;
  addresses: LoopbackAddresses;
  /** Runs the Pods of `namespace`; undefined with `runPods: false` (Pods then stay Pending). */
  runner: EtcdPodRunner;
  operator: TestOperator;
  /** The `Local` backup root (each namespace has a folder below it). */
  backupRoot: string;
  /** Stops the operator (not the Pods) and starts a new one, as an operator restart. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Options of {@link startEtcdOperator}. */
export interface EtcdHarnessOptions {
  /** Runs the operator under another identity (the deploy ServiceAccount). */
  as?: KubeConfig;
  /** Sees the operator's requests. */
  onRequest?: (method: string, path: string, status: number) => void;
  /** More namespaces the same operator serves, each with a pod runner of its own. */
  extraNamespaces?: string[];
  /** false: no pod runner for `namespace`, so member Pods stay Pending (as without a kubelet). Default true. */
  runPods?: boolean;
  /** The URL restore seeds download from, instead of the backup server's own. */
  restoreURL?: string;
  /** The cluster reconcile's settled look interval (default here 1 s; the operator's own default is 8 s). */
  clusters?: { intervalMs?: number };
}

/**
 * Runs the etcd operator against `namespace`, with the fake kubelet and the test's API access as `kc`.
 */
export async function startEtcdOperator(
  kc: KubeConfig,
  namespace: string,
  options: EtcdHarnessOptions = {},
): Promise<EtcdHarness> {
  // Specs take periodic backups every second or two; a production operator keeps the 10 s minimum.
  process.env.KONDUCTOR_MIN_BACKUP_INTERVAL_SECONDS ??= '1';
  const addresses = new LoopbackAddresses();
  const namespaces = [namespace, ...(options.extraNamespaces ?? [])];
  const runners = (options.runPods === false ? namespaces.slice(1) : namespaces).map(
    (ns) => new EtcdPodRunner({ kubeConfig: kc, addresses, namespace: ns }),
  );
  for (const runner of runners) await runner.start();
  const backupRoot = await mkdtemp(join(tmpdir(), 'konductor-backups-'));
  let restores: EtcdRestores;
  const start = (): Promise<TestOperator> => {
    restores = new EtcdRestores({
      localRoot: backupRoot,
      serve: {
        host: '127.0.0.1',
        port: 0,
        ...(options.restoreURL ? { url: options.restoreURL } : {}),
      },
    });
    return runOperator({
      kubeConfig: options.as ?? kc,
      onRequest: options.onRequest,
      namespaces,
      logger: silentLogger(),
      handlers: [
        new EtcdClusters({
          addresses,
          intervalMs: 1_000,
          busyIntervalMs: 300,
          tlsRefreshMs: 1_000,
          ...options.clusters,
        }),
        new EtcdBackups({ addresses, localRoot: backupRoot }),
        restores,
      ],
    });
  };
  const api = new ApiClient(kc);
  const harness: EtcdHarness = {
    namespace,
    api,
    addresses,
    runner: (options.runPods === false ? undefined : runners[0]) as EtcdPodRunner,
    operator: await start(),
    backupRoot,
    async restart() {
      await harness.operator.stop();
      await restores.stop();
      harness.operator = await start();
    },
    async stop() {
      await harness.operator.stop();
      await restores.stop();
      for (const runner of runners) await runner.stop();
      api.close();
      await rm(backupRoot, { recursive: true, force: true });
    },
  };
  return harness;
}

export interface EtcdClusterView {
  metadata: { name: string; uid: string; annotations?: Record<string, string> };
  spec: { size: number; version?: string; paused?: boolean };
  status?: {
    phase?: string;
    tlsMode?: string;
    controlPaused?: boolean;
    reason?: string;
    size?: number;
    members?: { ready: string[]; unready: string[] };
    currentVersion?: string;
    targetVersion?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

export function clusterPath(namespace: string, name = ''): string {
  return `/apis/${ETCD_API}/namespaces/${namespace}/etcdclusters${name ? `/${name}` : ''}`;
}

/** The path of any etcd-operator object, or of its collection. */
export function etcdObjectPath(
  namespace: string,
  plural: 'etcdclusters' | 'etcdbackups' | 'etcdrestores',
  name = '',
): string {
  return `/apis/${ETCD_API}/namespaces/${namespace}/${plural}${name ? `/${name}` : ''}`;
}

/** Creates an EtcdCluster, EtcdBackup or EtcdRestore in `namespace`. */
export async function createEtcdObject(
  h: EtcdHarness,
  kind: 'EtcdBackup' | 'EtcdRestore',
  name: string,
  spec: Record<string, unknown>,
  namespace = h.namespace,
): Promise<void> {
  const plural = kind === 'EtcdBackup' ? 'etcdbackups' : 'etcdrestores';
  await h.api.request('POST', etcdObjectPath(namespace, plural), {
    body: { apiVersion: ETCD_API, kind, metadata: { name }, spec },
  });
}

/** The status of an etcd-operator object (undefined before the operator wrote any). */
export async function etcdStatus<T>(
  h: EtcdHarness,
  plural: 'etcdclusters' | 'etcdbackups' | 'etcdrestores',
  name: string,
  namespace = h.namespace,
): Promise<T | undefined> {
  const object = await h.api.request<{ status?: T }>(
    'GET',
    etcdObjectPath(namespace, plural, name),
  );
  return object.status;
}

/** `etcdctl snapshot save` of a standalone etcd holding `keys`: a real backup file, without a cluster. */
export async function standaloneSnapshot(
  file: string,
  keys: Record<string, string>,
): Promise<void> {
  // A port the kernel handed out can be taken again before etcd binds it; a fresh pair then.
  for (let attempt = 1; ; attempt++) {
    try {
      await snapshotOnce(file, keys);
      return;
    } catch (error) {
      if (attempt >= 3) throw error;
    }
  }
}

async function snapshotOnce(file: string, keys: Record<string, string>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'konductor-etcd-snap-'));
  const client = `http://127.0.0.1:${await freePort()}`;
  const peer = `http://127.0.0.1:${await freePort()}`;
  const etcd = spawn(
    'etcd',
    [
      '--name',
      's',
      '--data-dir',
      join(dir, 'data'),
      '--listen-client-urls',
      client,
      '--advertise-client-urls',
      client,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `s=${peer}`,
    ],
    { stdio: 'ignore' },
  );
  let exited = false;
  etcd.once('exit', () => (exited = true));
  try {
    // Each etcdctl call is bounded: against a port held by something else, health waits 5 s per try.
    const options = { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 10_000 };
    for (let i = 0; ; i++) {
      if (exited) throw new Error(`standalone etcd on ${client} exited before it was healthy`);
      try {
        await run('etcdctl', ['--endpoints', client, 'endpoint', 'health'], options);
        break;
      } catch (error) {
        if (i >= 10) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    for (const [key, value] of Object.entries(keys))
      await run('etcdctl', ['--endpoints', client, 'put', key, value], options);
    await run('etcdctl', ['--endpoints', client, 'snapshot', 'save', file], options);
  } finally {
    etcd.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

export async function createCluster(
  h: EtcdHarness,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await h.api.request('POST', clusterPath(h.namespace), {
    body: { apiVersion: ETCD_API, kind: 'EtcdCluster', metadata: { name }, spec },
  });
}

export function readCluster(h: EtcdHarness, name: string): Promise<EtcdClusterView> {
  return h.api.request<EtcdClusterView>('GET', clusterPath(h.namespace, name));
}

export async function setSize(h: EtcdHarness, name: string, size: number): Promise<void> {
  await h.api.request('PATCH', clusterPath(h.namespace, name), {
    body: { spec: { size } },
    contentType: 'application/merge-patch+json',
  });
}

/** Files of a client certificate, its key and the CA, for `etcdctl` and the npm client. */
export interface ClientTLSFiles {
  cert: string;
  key: string;
  ca: string;
}

/** Clusters whose members serve TLS, by `<namespace>/<name>`: the helpers below dial them over https with these files. */
const clientTLS = new Map<string, ClientTLSFiles>();

/** Makes the helpers of this module talk to `name`'s members over https, presenting `files`. */
export function useClientTLS(h: EtcdHarness, name: string, files: ClientTLSFiles): void {
  clientTLS.set(`${h.namespace}/${name}`, files);
}

function tlsOf(h: EtcdHarness, name: string): ClientTLSFiles | undefined {
  return clientTLS.get(`${h.namespace}/${name}`);
}

/** `etcdctl` flags for the cluster's client TLS, if any. */
function tlsFlags(h: EtcdHarness, name: string): string[] {
  const tls = tlsOf(h, name);
  return tls ? ['--cert', tls.cert, '--key', tls.key, '--cacert', tls.ca] : [];
}

/** The cluster's client URLs of members the runner runs (`https` for a TLS cluster). */
export function clientURLs(h: EtcdHarness, name: string): string[] {
  const urls = h.addresses.endpoints(h.namespace, `http://${name}-client:2379`);
  return tlsOf(h, name) ? urls.map((url) => url.replace(/^http:/, 'https:')) : urls;
}

/** `member list` as etcdctl prints it, through one running member. */
export async function memberList(
  h: EtcdHarness,
  name: string,
): Promise<{ name: string; clientURLs: string[] }[]> {
  const endpoints = clientURLs(h, name);
  const { stdout } = await run(
    'etcdctl',
    ['--endpoints', endpoints.join(','), ...tlsFlags(h, name), 'member', 'list', '-w', 'json'],
    { env: { ...process.env, ETCDCTL_API: '3' } },
  );
  const parsed = JSON.parse(stdout) as { members?: { name?: string; clientURLs?: string[] }[] };
  return (parsed.members ?? []).map((m) => ({
    name: m.name ?? '',
    clientURLs: m.clientURLs ?? [],
  }));
}

/** Every member answers `endpoint health`. */
export async function allHealthy(h: EtcdHarness, name: string): Promise<boolean> {
  const members = await memberList(h, name);
  const urls = members.flatMap((m) => m.clientURLs);
  if (urls.length !== members.length) return false;
  try {
    await run(
      'etcdctl',
      ['--endpoints', urls.join(','), ...tlsFlags(h, name), 'endpoint', 'health'],
      { env: { ...process.env, ETCDCTL_API: '3' } },
    );
    return true;
  } catch {
    return false;
  }
}

/** What {@link settledAt} also waits for besides the size: a version, the Available condition. */
export interface SettledOptions {
  /** Every member at this version (status.currentVersion). */
  version?: string;
  /** Status says Available=True too. */
  available?: boolean;
  timeoutMs?: number;
}

/**
 * Waits until status says Running at `size`, `member list` shows exactly `size` started members and
 * every one answers `endpoint health` (and the options hold).
 */
export async function settledAt(
  h: EtcdHarness,
  name: string,
  size: number,
  options: SettledOptions = {},
): Promise<void> {
  const { version, available = false, timeoutMs = 120_000 } = options;
  await waitFor(
    async () => {
      const status = (await readCluster(h, name).catch(() => undefined))?.status;
      if (status?.phase !== 'Running' || status.size !== size) return false;
      if (version !== undefined && status.currentVersion !== version) return false;
      if (available && status.conditions?.find((c) => c.type === 'Available')?.status !== 'True')
        return false;
      const members = await memberList(h, name).catch(() => []);
      return (
        members.length === size &&
        members.every((m) => m.name !== '') &&
        (await allHealthy(h, name))
      );
    },
    {
      what: `${name} to settle at ${size} healthy members${version ? ` of ${version}` : ''}`,
      timeoutMs,
    },
  );
}

/** A client on the cluster's live members (for writing and reading keys). */
export function etcdClient(h: EtcdHarness, name: string): Etcd3 {
  const tls = tlsOf(h, name);
  const credentials = tls
    ? {
        credentials: {
          rootCertificate: readFileSync(tls.ca),
          certChain: readFileSync(tls.cert),
          privateKey: readFileSync(tls.key),
        },
      }
    : {};
  return new Etcd3({ hosts: clientURLs(h, name), ...credentials });
}

/** Writes `keys` through the cluster's live members, one at a time. */
export async function putKeys(
  h: EtcdHarness,
  name: string,
  keys: Record<string, string>,
): Promise<void> {
  const etcd = etcdClient(h, name);
  try {
    for (const [key, value] of Object.entries(keys)) await etcd.put(key).value(value);
  } finally {
    etcd.close();
  }
}

/** One key's value (null when absent), read through the cluster's live members. */
export async function readKey(h: EtcdHarness, name: string, key: string): Promise<string | null> {
  const etcd = etcdClient(h, name);
  try {
    return await etcd.get(key).string();
  } finally {
    etcd.close();
  }
}

/** Pods of the cluster, by name. */
export async function memberPods(
  h: EtcdHarness,
  name: string,
): Promise<{ metadata: { name: string }; status?: { phase?: string } }[]> {
  const list = await h.api.request<{
    items: { metadata: { name: string }; status?: { phase?: string } }[];
  }>('GET', `/api/v1/namespaces/${h.namespace}/pods`, {
    query: { labelSelector: `app=etcd,etcd_cluster=${name}` },
  });
  return list.items;
}

/** Kubernetes Events about one object of the harness namespace. */
export async function eventsFor(
  h: EtcdHarness,
  name: string,
): Promise<{ reason?: string; type?: string; message?: string; count?: number }[]> {
  const list = await h.api.request<{
    items: { reason?: string; type?: string; message?: string; count?: number }[];
  }>('GET', `/api/v1/namespaces/${h.namespace}/events`, {
    query: { fieldSelector: `involvedObject.name=${name}` },
  });
  return list.items;
}
