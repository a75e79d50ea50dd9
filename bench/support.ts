// What every benchmark scenario shares: where it runs (a control plane's kubeconfig and which build of
// the framework the operator processes load), the bench CRD, bulk creation, API write counts from the
// API server's own metrics, operator child processes, and percentiles.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import { createRequire } from 'node:module';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../src/framework/api/api-client.js';
import type { Resource } from '../src/framework/api/resource.js';
import { installCrds, readCrds } from '../src/testing/crds.js';
import { watchResource } from '../src/framework/watching/watch-stream.js';

/** The benchmark's CRD (bench/crd.yaml). */
export const benchResource: Resource = {
  group: 'bench.konductor.dev',
  version: 'v1',
  plural: 'benchobjects',
  kind: 'BenchObject',
  namespaced: true,
  hasStatus: true,
};
export const benchApiVersion = `${benchResource.group}/${benchResource.version}`;

/**
 * Where a scenario runs: the control plane (as a KubeConfig, and as a kubeconfig file for the operator
 * processes) and which framework build the operator processes load: `dist` (compiled, as deployed, what
 * `npm run bench` measures) or `src` (the TypeScript sources through tsx, so the smoke test needs no build).
 */
export interface BenchTarget {
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  framework: 'dist' | 'src';
}

/** One JSON line of figures. */
export type Figures = Record<string, unknown>;

/**
 * The machine, for every figures line: cores, memory, Node, and the 1-minute load average when the line
 * is made (well above `cores` means other work competed for the CPU and the figures are noisy).
 */
export function machine(): Figures {
  return {
    cores: cpus().length,
    memoryMb: Math.round(totalmem() / 2 ** 20),
    node: process.version,
    nodeOptions: benchNodeOptions(),
    loadAverage1m: round2(loadavg()[0]!),
  };
}

const root = fileURLToPath(new URL('..', import.meta.url));

/** A positive number from the environment, or the default. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

export const round1 = (value: number): number => Math.round(value * 10) / 10;
export const round2 = (value: number): number => Math.round(value * 100) / 100;

/** Nearest-rank percentile (q in [0, 1]) of unsorted values; NaN for none. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1]!;
}

/** `{<prefix>P50, <prefix>P95, <prefix>P99, <prefix>Max}` of values in milliseconds. */
export function latencyFigures(prefix: string, values: readonly number[]): Figures {
  return {
    [`${prefix}P50`]: round1(percentile(values, 0.5)),
    [`${prefix}P95`]: round1(percentile(values, 0.95)),
    [`${prefix}P99`]: round1(percentile(values, 0.99)),
    [`${prefix}Max`]: round1(percentile(values, 1)),
  };
}

export async function installBenchCrd(kc: KubeConfig): Promise<void> {
  await installCrds(kc, readCrds(fileURLToPath(new URL('./crd.yaml', import.meta.url))));
}

export function collection(namespace: string): string {
  return `/apis/${benchResource.group}/${benchResource.version}/namespaces/${encodeURIComponent(namespace)}/${benchResource.plural}`;
}

export async function createNamespace(kc: KubeConfig, namespace: string): Promise<void> {
  const client = new ApiClient(kc);
  try {
    await client.request('POST', '/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    });
  } finally {
    client.close();
  }
}

/** Creates a namespace and `count` bench objects `<prefix>-<i>` (spec.idx = i) in it, 32 requests at a time; returns the seconds it took. */
export async function createObjects(
  kc: KubeConfig,
  namespace: string,
  count: number,
  prefix = 'o',
  spec: (i: number) => Record<string, unknown> = (i) => ({ idx: i }),
): Promise<number> {
  await createNamespace(kc, namespace);
  const client = new ApiClient(kc);
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      await client.request('POST', collection(namespace), {
        body: {
          apiVersion: benchApiVersion,
          kind: benchResource.kind,
          metadata: { name: `${prefix}-${i}` },
          spec: spec(i),
        },
      });
    }
  };
  try {
    await Promise.all(Array.from({ length: 32 }, worker));
  } finally {
    client.close();
  }
  return (performance.now() - started) / 1000;
}

interface BenchObject {
  metadata?: { name?: string };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** Every bench object in a namespace, read in pages. */
/**
 * A plain watch of the bench objects in `namespace` in this (the harness's) process: no handler, no
 * writes. It records when each object's ADDED event arrived after the initial listing, which is the
 * delivery no operator on this control plane can beat. `listed` resolves once it is listed.
 */
export class PlainWatch {
  /** When (Date.now()) each object's ADDED event arrived, by name. */
  readonly arrivals = new Map<string, number>();
  readonly listed: Promise<void>;
  private readonly client: ApiClient;
  private readonly subscription: { unsubscribe(): void };

  constructor(kc: KubeConfig, namespace: string) {
    this.client = new ApiClient(kc);
    let listed!: () => void;
    this.listed = new Promise<void>((resolve) => (listed = resolve));
    this.subscription = watchResource(this.client, benchResource, { namespace }).subscribe(
      (event) => {
        if (event.type === 'SYNCED') listed();
        else if (event.type === 'ADDED' && !event.fromList)
          this.arrivals.set(event.object.metadata?.name ?? '', Date.now());
      },
    );
  }

  /** Each arrival minus when that object was sent (`sentAt` by name), for the objects it saw. */
  delays(sentAt: ReadonlyMap<string, number>): number[] {
    const delays: number[] = [];
    for (const [name, sent] of sentAt) {
      const arrived = this.arrivals.get(name);
      if (arrived !== undefined) delays.push(arrived - sent);
    }
    return delays;
  }

  stop(): void {
    this.subscription.unsubscribe();
    this.client.close();
  }
}

export async function listObjects(kc: KubeConfig, namespace: string): Promise<BenchObject[]> {
  const client = new ApiClient(kc);
  const items: BenchObject[] = [];
  let token: string | undefined;
  try {
    do {
      const page = await client.request<{
        items?: BenchObject[];
        metadata?: { continue?: string };
      }>('GET', collection(namespace), { query: { limit: 1_000, continue: token } });
      items.push(...(page.items ?? []));
      token = page.metadata?.continue || undefined;
    } while (token);
  } finally {
    client.close();
  }
  return items;
}

/** What the benchmark reads from the API server's own `/metrics`. */
export interface ApiServerCounters {
  /** `apiserver_request_total` for PATCH on bench objects (main resource and status). */
  patches: number;
  /** `process_cpu_seconds_total` of the API server process. */
  cpuSeconds: number;
}

/** Reads {@link ApiServerCounters}; needs a KubeConfig allowed to read `/metrics` (the control plane's admin is). */
export async function apiServerCounters(kc: KubeConfig): Promise<ApiServerCounters> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const options: RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(
      `${cluster.server.replace(/\/+$/, '')}/metrics`,
      { ...options, method: 'GET' },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(body)
            : reject(new Error(`GET /metrics answered ${res.statusCode}: ${body.slice(0, 200)}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
  const counters: ApiServerCounters = { patches: 0, cpuSeconds: 0 };
  const value = (line: string): number => Number(line.slice(line.lastIndexOf(' ') + 1));
  for (const line of text.split('\n')) {
    if (line.startsWith('process_cpu_seconds_total ')) counters.cpuSeconds = value(line);
    else if (
      line.startsWith('apiserver_request_total{') &&
      line.includes(`resource="${benchResource.plural}"`) &&
      line.includes(`group="${benchResource.group}"`) &&
      line.includes('verb="PATCH"')
    ) {
      counters.patches += value(line);
    }
  }
  return counters;
}

/** Busy and total CPU time of the whole machine (all cores), in seconds, from /proc/stat; undefined elsewhere. */
function machineCpu(): { busy: number; total: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0); // user nice system idle iowait irq softirq steal
    const idle = fields[3]! + fields[4]!;
    return { busy: (total - idle) / 100, total: total / 100 };
  } catch {
    return undefined;
  }
}

/** What {@link measure} saw over a stretch of work. */
export interface Measured<T> {
  value: T;
  seconds: number;
  /** PATCHes on bench objects the API server counted. */
  patches: number;
  /** CPU as a percentage of one core: the API server, this (load-generating) process, and the whole machine. */
  apiServerCpuPercent: number;
  benchCpuPercent: number;
  machineCpuPercent: number | undefined;
}

/** Runs `work`, measuring the API server's PATCHes on bench objects and where the machine's CPU went meanwhile. */
export async function measure<T>(kc: KubeConfig, work: () => Promise<T>): Promise<Measured<T>> {
  const before = await apiServerCounters(kc);
  const cpuBefore = process.cpuUsage();
  const machineBefore = machineCpu();
  const started = performance.now();
  const value = await work();
  const seconds = (performance.now() - started) / 1000;
  const machineAfter = machineCpu();
  const cpu = process.cpuUsage(cpuBefore);
  const after = await apiServerCounters(kc);
  const percent = (cpuSeconds: number): number => round1((cpuSeconds / seconds) * 100);
  return {
    value,
    seconds,
    patches: after.patches - before.patches,
    apiServerCpuPercent: percent(after.cpuSeconds - before.cpuSeconds),
    benchCpuPercent: percent((cpu.user + cpu.system) / 1e6),
    machineCpuPercent:
      machineBefore && machineAfter ? percent(machineAfter.busy - machineBefore.busy) : undefined,
  };
}

/**
 * CPU figures of a measured stretch, as percentages of one core: the operator process's, the API
 * server's, and everything else on the machine (etcd, plus whatever else runs there: on a quiet machine
 * this is etcd alone, a few tens of percent; far more means the figures are noisy).
 */
export function cpuFigures(measured: Measured<unknown>, operatorCpuPercent: number): Figures {
  const other =
    measured.machineCpuPercent === undefined
      ? undefined
      : round1(
          measured.machineCpuPercent -
            measured.apiServerCpuPercent -
            measured.benchCpuPercent -
            operatorCpuPercent,
        );
  return {
    operatorCpuPercent,
    apiServerCpuPercent: measured.apiServerCpuPercent,
    harnessCpuPercent: measured.benchCpuPercent,
    etcdAndOtherCpuPercent: other,
  };
}

/**
 * The `NODE_OPTIONS` operator processes run with: the Deployment's (deploy/30-deployment.yaml), so
 * figures are those of the operator as deployed; `BENCH_NODE_OPTIONS` overrides it ('' for Node's defaults).
 */
export function benchNodeOptions(): string {
  if (process.env.BENCH_NODE_OPTIONS !== undefined) return process.env.BENCH_NODE_OPTIONS;
  const deployment = readFileSync(new URL('../deploy/30-deployment.yaml', import.meta.url), 'utf8');
  const match = /- name: NODE_OPTIONS\s+value: (.+)/.exec(deployment);
  return match?.[1]?.trim().replace(/^["']|["']$/g, '') ?? '';
}

/**
 * An operator-side process (one of bench/*-child.mjs), so its RSS and CPU are its own. It writes JSON
 * lines to stdout (`{"ready":true}`, then `{"result":{...}}`); stderr passes through.
 */
export class OperatorProcess {
  private readonly child: ChildProcess;
  private readonly messages: Figures[] = [];
  private readonly waiters: Array<() => void> = [];
  private exitCode: number | null | undefined;
  private readonly exited: Promise<void>;

  /**
   * `loadsFramework: false` for the naive baseline, which never needs the TypeScript loader; `env` is
   * added to the child's environment (e.g. `BENCH_STORAGE`).
   */
  constructor(
    target: BenchTarget,
    script: string,
    args: readonly (string | number)[],
    options: { loadsFramework?: boolean; env?: NodeJS.ProcessEnv } = {},
  ) {
    const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    // Every operator runs with the Node options the Deployment gives the operator's container.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...options.env,
      NODE_OPTIONS: benchNodeOptions(),
    };
    if (target.framework === 'src' && options.loadsFramework !== false) {
      // The TypeScript sources through tsx's loader; `dist` children load the compiled framework by default.
      nodeArgs.unshift(
        '--import',
        pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href,
      );
      env.BENCH_FRAMEWORK = pathToFileURL(`${root}src/framework/index.ts`).href;
    } else {
      delete env.BENCH_FRAMEWORK;
    }
    this.child = spawn(
      process.execPath,
      [
        ...nodeArgs,
        fileURLToPath(new URL(`./${script}`, import.meta.url)),
        target.kubeconfigPath,
        ...args.map(String),
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env,
      },
    );
    let buffer = '';
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      buffer += chunk;
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (line) this.messages.push(JSON.parse(line) as Figures);
        newline = buffer.indexOf('\n');
      }
      this.wake();
    });
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        this.exitCode = code;
        this.wake();
        resolve();
      }),
    );
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  /** The first message with `key`, waiting up to `timeoutMs`; fails if the process exits first. */
  message(key: string, timeoutMs: number): Promise<Figures> {
    return this.messageWhere((m) => key in m, timeoutMs, `'${key}'`);
  }

  /** The first message that `matches`, waiting up to `timeoutMs`; fails if the process exits first. */
  async messageWhere(
    matches: (message: Figures) => boolean,
    timeoutMs: number,
    what = 'the message awaited',
  ): Promise<Figures> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(matches);
      if (found) return found;
      if (this.exitCode !== undefined)
        throw new Error(`operator process exited with ${this.exitCode} before ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        this.kill();
        throw new Error(`no ${what} from the operator process within ${timeoutMs} ms`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The process's final `result`, once it has exited cleanly. */
  async result(timeoutMs: number): Promise<Figures> {
    const result = (await this.message('result', timeoutMs)).result as Figures;
    await this.exited;
    if (this.exitCode !== 0) throw new Error(`operator process exited with ${this.exitCode}`);
    return result;
  }

  kill(): void {
    if (this.exitCode === undefined) this.child.kill('SIGKILL');
  }

  /** Whether the process still runs. */
  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** Sends the process a signal (a child may answer one with a message, e.g. SIGUSR2 for its memory). */
  signal(signal: NodeJS.Signals): void {
    if (this.exitCode === undefined) this.child.kill(signal);
  }

  /** Every message with `key` so far, oldest first. */
  all(key: string): Figures[] {
    return this.messages.filter((message) => key in message);
  }

  /** The newest message with `key` so far, if any. */
  latest(key: string): Figures | undefined {
    for (let i = this.messages.length - 1; i >= 0; i--)
      if (key in this.messages[i]!) return this.messages[i];
    return undefined;
  }
}
