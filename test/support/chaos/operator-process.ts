import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { FINALIZER } from '../../../src/framework/state/keys.js';
import { waitFor } from '../../../src/testing/index.js';
import { cleanEnv } from '../cli.js';
import { statusOf } from '../cluster.js';
import { widgetResource, type Widget, type Widgets } from '../widgets.js';
import { readLedger, type ExpectedObject, type LedgerEntry } from './ledger.js';
import { chaosStorage, recordedSize, type Storage } from './storage.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
/** The chaos workload, relative to the repository root (the child's working directory). */
export const LEDGER_FIXTURE = 'test/fixtures/handlers/ledger-widgets.ts';

/** Leader election with explicit timings in seconds (the CLI only has the 30 s / 20 s / 2 s defaults). */
export interface ChaosLeaderElection {
  namespace: string;
  name: string;
  leaseDuration: number;
  renewDeadline: number;
  retryPeriod: number;
}

/** What {@link LedgerOperator} runs. */
export interface LedgerOperatorOptions {
  /** Path of the kubeconfig file the operator uses. */
  kubeconfig: string;
  /** The one namespace it watches. */
  namespace: string;
  /** The ledger file (`CHAOS_LEDGER`). */
  ledger: string;
  /** Work time per handler run (`CHAOS_HANDLER_MS`). Default 0. */
  handlerMs?: number;
  /** `--concurrency`; the framework's default (16) when undefined. */
  concurrency?: number;
  /** `--storage`: where the diff-base and progress are kept. Default: {@link chaosStorage} (`CHAOS_STORAGE`). */
  storage?: Storage;
  /**
   * Without it the operator is `konductor run <ledger fixture> --standalone`, exactly as a user runs it.
   * With it, a small embedded launcher runs the same handlers with leader election at these timings,
   * because the CLI has no flags for Lease durations and the defaults make each failover take ~32 s.
   */
  leaderElection?: ChaosLeaderElection;
  /** With leader election: share the objects out among the replicas (`sharding: true`). */
  sharding?: boolean;
  /** With leader election: the launcher's log level (`info` by default; `debug` tells who drained what). */
  logLevel?: 'info' | 'debug';
}

/**
 * The embedded launcher for leader-election runs: what `konductor run` does (tsx, JSON logs, exit 1
 * on lost leadership, drain on SIGTERM), with the Lease timings from `CHAOS_OPERATOR`.
 */
const LAUNCHER = `
const { register } = await import('tsx/esm/api');
register();
const config = JSON.parse(process.env.CHAOS_OPERATOR);
const { KubeConfig } = await import('@kubernetes/client-node');
const { createOperator, createLogger } = await import(config.framework);
const { LedgerWidgets } = await import(config.fixture);
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(config.kubeconfig);
const logger = createLogger({ level: config.logLevel, format: 'json' });
const operator = createOperator({
  kubeConfig,
  handlers: [LedgerWidgets],
  namespaces: [config.namespace],
  concurrency: config.concurrency,
  storage: config.storage,
  logger,
  leaderElection: { ...config.leaderElection, identity: 'ledger-' + process.pid },
  sharding: config.sharding,
}).start();
void operator.lostLeadership.then(() => process.exit(1));
void operator.ready.then(() => logger.info('initial listings done; watching for changes'));
let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) process.exit(130);
  stopping = true;
  operator.stop(30000).then(() => process.exit(0), () => process.exit(1));
});
`;

/** One incarnation of the operator process. */
interface Incarnation {
  child: ChildProcess;
  pid: number;
  output: string;
  startedAt: number;
  exited: Promise<number | string>;
  exit: number | string | undefined;
}

/**
 * The ledger operator as a child process, which a test can SIGKILL and start again any number of
 * times. Each start is an incarnation with its own pid and output.
 */
export class LedgerOperator {
  private readonly incarnations: Incarnation[] = [];
  /** How many times this operator was SIGKILLed by {@link kill}. */
  kills = 0;
  /** Per incarnation that reached {@link waitReady}: ms from spawn to its initial listing done. */
  readonly startupMs: number[] = [];

  /** Where this operator keeps its bookkeeping. */
  readonly storage: Storage;

  constructor(private readonly options: LedgerOperatorOptions) {
    this.storage = options.storage ?? chaosStorage();
  }

  /** Every pid this operator ran as, oldest first. */
  get pids(): number[] {
    return this.incarnations.map((i) => i.pid);
  }

  private get current(): Incarnation | undefined {
    return this.incarnations[this.incarnations.length - 1];
  }

  get pid(): number | undefined {
    return this.current?.pid;
  }

  /** True while the current incarnation runs. */
  get alive(): boolean {
    return this.current !== undefined && this.current.exit === undefined;
  }

  /** The current incarnation's exit code or signal, once it has exited. */
  get exitStatus(): number | string | undefined {
    return this.current?.exit;
  }

  /** Starts a new incarnation (the previous one must have exited). */
  start(): this {
    if (this.alive) throw new Error(`the ledger operator is already running (pid ${this.pid})`);
    const { options } = this;
    const env: NodeJS.ProcessEnv = {
      ...cleanEnv(),
      CHAOS_LEDGER: options.ledger,
      CHAOS_HANDLER_MS: String(options.handlerMs ?? 0),
    };
    let args: string[];
    if (options.leaderElection) {
      env.CHAOS_OPERATOR = JSON.stringify({
        framework: new URL('../../../src/framework/index.ts', import.meta.url).href,
        fixture: new URL(`../../../${LEDGER_FIXTURE}`, import.meta.url).href,
        kubeconfig: options.kubeconfig,
        namespace: options.namespace,
        concurrency: options.concurrency,
        storage: this.storage,
        leaderElection: options.leaderElection,
        sharding: options.sharding ?? false,
        logLevel: options.logLevel ?? 'info',
      });
      args = ['--input-type=module', '-e', LAUNCHER];
    } else {
      args = [
        'bin/konductor.mjs',
        'run',
        LEDGER_FIXTURE,
        '--standalone',
        '-n',
        options.namespace,
        '--kubeconfig',
        options.kubeconfig,
      ];
      args.push('--health-port', '0', '--log-format', 'json', '--storage', this.storage);
      if (options.concurrency !== undefined)
        args.push('--concurrency', String(options.concurrency));
    }
    // One process (tsx hooks in, it spawns nothing), in the test runner's process group so Ctrl-C reaches it too.
    const child = spawn(process.execPath, args, {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const incarnation: Incarnation = {
      child,
      pid: child.pid!,
      output: '',
      startedAt: Date.now(),
      exit: undefined,
      exited: Promise.resolve(0),
    };
    const collect = (chunk: Buffer): void => {
      incarnation.output += chunk.toString();
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    incarnation.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        incarnation.exit = code ?? signal ?? 'unknown';
        resolve(incarnation.exit);
      }),
    );
    this.incarnations.push(incarnation);
    return this;
  }

  /** The current incarnation's log lines (JSON), parsed where possible. */
  logs(): Array<{ msg?: string; level?: number } & Record<string, unknown>> {
    return (this.current?.output ?? '').split('\n').flatMap((line) => {
      try {
        return line.startsWith('{') ? [JSON.parse(line) as { msg?: string }] : [];
      } catch {
        return [];
      }
    });
  }

  /** Whether the current incarnation has logged `message` (the whole `msg`). */
  logged(message: string): boolean {
    return (this.current?.output ?? '').includes(`"msg":${JSON.stringify(message)}`);
  }

  /** True once the current incarnation has won the Lease. */
  get leading(): boolean {
    return this.alive && this.logged('leading: starting work');
  }

  /** True once the current incarnation holds its member Lease (with sharding). */
  get joined(): boolean {
    return this.alive && this.logged('joined the sharding ring: handling its shard');
  }

  /** Waits until the current incarnation has listed everything (and, with leader election, leads). */
  async waitReady(timeoutMs = 30_000): Promise<void> {
    await waitFor(
      () => {
        if (!this.alive)
          throw new Error(
            `the ledger operator exited (${String(this.exitStatus)}) before it was ready:\n${this.tail()}`,
          );
        return this.logged('initial listings done; watching for changes');
      },
      {
        what: `the ledger operator (pid ${this.pid}) to finish its initial listing`,
        timeoutMs,
        intervalMs: 50,
      },
    );
    this.startupMs.push(Date.now() - this.current!.startedAt);
  }

  /**
   * The current incarnation's Prometheus metrics (`konductor_*`), as name (with labels) to value,
   * from its health server; needs the CLI mode (the embedded launcher serves none).
   */
  async metrics(): Promise<Map<string, number>> {
    const text = await (await fetch(this.healthUrl('/metrics'))).text();
    const values = new Map<string, number>();
    for (const line of text.split('\n')) {
      const match = /^(konductor_\S+) (\S+)$/.exec(line);
      if (match) values.set(match[1]!, Number(match[2]));
    }
    return values;
  }

  /** The HTTP status of the current incarnation's `/healthz` or `/readyz`. */
  async health(path: '/healthz' | '/readyz'): Promise<number> {
    return (await fetch(this.healthUrl(path))).status;
  }

  private healthUrl(path: string): string {
    const port = this.logs().find((l) => l.msg === 'health and metrics server listening')?.port;
    if (typeof port !== 'number')
      throw new Error(`the ledger operator (pid ${this.pid}) has not logged its health port`);
    return `http://127.0.0.1:${port}${path}`;
  }

  /** The sum of a metric over all its label sets (0 when absent). */
  async metric(name: string): Promise<number> {
    let total = 0;
    for (const [key, value] of await this.metrics())
      if (key === name || key.startsWith(`${name}{`)) total += value;
    return total;
  }

  /** SIGKILLs the current incarnation and waits for its exit. */
  async kill(): Promise<void> {
    const current = this.current;
    if (!current || current.exit !== undefined) return;
    signal(current.pid, 'SIGKILL');
    this.kills++;
    await current.exited;
  }

  /** SIGTERM (drain, release the Lease), escalating to SIGKILL after `graceMs`; resolves with the exit status. */
  async stop(graceMs = 15_000): Promise<number | string | undefined> {
    const current = this.current;
    if (!current) return undefined;
    if (current.exit !== undefined) return current.exit;
    signal(current.pid, 'SIGTERM');
    const timer = setTimeout(() => signal(current.pid, 'SIGKILL'), graceMs);
    try {
      return await current.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Every incarnation's log lines that match, each prefixed with its pid (the last `limit` of each), for failure messages. */
  linesMatching(pattern: RegExp, limit = 12): string[] {
    return this.incarnations.flatMap((incarnation) =>
      incarnation.output
        .split('\n')
        .filter((line) => pattern.test(line))
        .slice(-limit)
        .map((line) => `pid ${incarnation.pid}: ${line}`),
    );
  }

  /** The last lines the current incarnation printed, for failure messages. */
  tail(lines = 20): string {
    return (this.current?.output ?? '').split('\n').slice(-lines).join('\n');
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

/**
 * When the framework recorded each handled state, as seen by a watch of the test's own: the first
 * time an object carried a diff-base with a given `spec.size` (in its annotations or its status,
 * whichever storage the operator uses), and the first time a deleted object
 * no longer carried our finalizer (or was gone). Used to judge duplicates after kills.
 */
export class RecordingWatch {
  private readonly sizes = new Map<string, Map<number, number>>();
  private readonly deletions = new Map<string, number>();
  private request: { abort(): void } | undefined;
  private resourceVersion: string | undefined;
  private stopped = false;
  /** Errors of the watch itself, for diagnosis. */
  readonly errors: string[] = [];

  private constructor(
    private readonly kc: KubeConfig,
    private readonly namespace: string,
  ) {}

  /** Starts watching the namespace's widgets; resolves once the watch is open. */
  static async start(kc: KubeConfig, namespace: string): Promise<RecordingWatch> {
    const watch = new RecordingWatch(kc, namespace);
    await watch.open();
    return watch;
  }

  private async open(): Promise<void> {
    if (this.stopped) return;
    const path = `/apis/${widgetResource.group}/${widgetResource.version}/namespaces/${this.namespace}/${widgetResource.plural}`;
    this.request = await new Watch(this.kc).watch(
      path,
      this.resourceVersion
        ? { resourceVersion: this.resourceVersion, allowWatchBookmarks: true }
        : { allowWatchBookmarks: true },
      (type: string, object: Widget) => this.observe(type, object),
      (error: unknown) => {
        if (error) this.errors.push(String(error));
        if (!this.stopped)
          setTimeout(
            () => void this.open().catch((e: unknown) => this.errors.push(String(e))),
            200,
          );
      },
    );
  }

  private observe(type: string, object: Widget): void {
    const now = Date.now();
    const meta = object.metadata ?? {};
    if (meta.resourceVersion) this.resourceVersion = meta.resourceVersion;
    if (type === 'BOOKMARK' || type === 'ERROR' || !meta.name) return;
    const name = meta.name;
    const size = recordedSize(object);
    if (size !== undefined) {
      const sizes = this.sizes.get(name) ?? new Map<number, number>();
      if (!sizes.has(size)) sizes.set(size, now);
      this.sizes.set(name, sizes);
    }
    const released =
      type === 'DELETED' ||
      (meta.deletionTimestamp !== undefined && !(meta.finalizers ?? []).includes(FINALIZER));
    if (released && !this.deletions.has(name)) this.deletions.set(name, now);
  }

  /** When the handling of `size` (or, for `delete`, the deletion) of `name` was first seen recorded. */
  recordedAt(
    name: string,
    kind: LedgerEntry['kind'],
    size: number | undefined,
  ): number | undefined {
    if (kind === 'delete') return this.deletions.get(name);
    return size === undefined ? undefined : this.sizes.get(name)?.get(size);
  }

  stop(): void {
    this.stopped = true;
    this.request?.abort();
  }
}

/** Repeated completed runs, and the ones not excused by {@link judgeDuplicates}'s rule. */
export interface DuplicateVerdict {
  /** Completed runs of an object for a state (size, or its deletion) that an earlier completed run had already handled. */
  total: number;
  /** Of those, repeats that started after the earlier run's result was recorded on the object. */
  unjustified: string[];
}

/**
 * The duplicate rule for runs interrupted by kills: a handler run that completed (`done` in the
 * ledger) may be repeated only if its result had not been recorded on the object when the repeat
 * started — recorded meaning the diff-base (annotation or status) carried the handled size (for create and
 * update runs; create and update count as the same state), or our finalizer was released (for
 * deletions), as seen by `recordings`. A run whose `done` line is missing was cut by a kill and
 * never counts. So a kill that lands between a handler's side effect and the framework's PATCH may
 * repeat the side effect; a kill after the PATCH may not.
 */
export function judgeDuplicates(
  entries: readonly LedgerEntry[],
  recordings: RecordingWatch,
): DuplicateVerdict {
  const starts = new Map<string, number[]>();
  const firstDone = new Set<string>();
  const verdict: DuplicateVerdict = { total: 0, unjustified: [] };
  for (const entry of entries) {
    const run = `${entry.pid}/${entry.uid}/${entry.kind}/${entry.size}`;
    if (entry.at === 'start') {
      starts.set(run, [...(starts.get(run) ?? []), entry.time]);
      continue;
    }
    const startedAt = starts.get(run)?.shift() ?? entry.time;
    const state =
      entry.kind === 'delete' ? `${entry.uid}/delete` : `${entry.uid}/size=${entry.size}`;
    if (!firstDone.has(state)) {
      firstDone.add(state);
      continue;
    }
    verdict.total++;
    const recordedAt = recordings.recordedAt(entry.name, entry.kind, entry.size);
    if (recordedAt !== undefined && recordedAt < startedAt) {
      verdict.unjustified.push(
        `${entry.name}: ${entry.kind} of size ${entry.size} repeated by pid ${entry.pid} at ${startedAt}, ${startedAt - recordedAt} ms after it was recorded`,
      );
    }
  }
  return verdict;
}

/** A seeded random source (mulberry32), so a failing chaos run can be replayed with `CHAOS_SEED`. */
export class ChaosRandom {
  readonly seed: number;
  private state: number;

  constructor(seed = Number(process.env.CHAOS_SEED) || Math.floor(Math.random() * 2 ** 31)) {
    this.seed = seed;
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
}

/**
 * The changes a scenario makes to widgets `<prefix>-<n>`, kept as the {@link ExpectedObject}s that
 * `checkLedger` judges. Sizes are unique per object and change: `n` at creation, then `1000·k + n`.
 * With `persist`, each write is retried until the API server takes it (for outages that answer
 * errors); a create that answers 409 or a delete that answers 404 after a retry had landed before.
 */
export class LedgerWorkload {
  readonly expected = new Map<string, ExpectedObject>();
  private next = 0;

  constructor(
    private readonly ledger: string,
    private readonly random: ChaosRandom,
    private readonly options: { prefix?: string; persist?: boolean } = {},
  ) {}

  async create(widgets: Widgets): Promise<string> {
    const n = this.next++;
    const name = `${this.options.prefix ?? 'w'}-${n}`;
    await this.write(() => widgets.create(name, { size: n }), 409);
    this.expected.set(name, { name, sizes: [n], deleted: false });
    return name;
  }

  async resize(widgets: Widgets, name: string): Promise<void> {
    const object = this.expected.get(name)!;
    const size = 1_000 * object.sizes.length + object.sizes[0]!;
    await this.write(() => widgets.patchSpec(name, { size }));
    object.sizes.push(size);
  }

  async remove(widgets: Widgets, name: string): Promise<void> {
    await this.write(() => widgets.delete(name), 404);
    this.expected.get(name)!.deleted = true;
  }

  /** Names of objects not deleted by the test. */
  live(): string[] {
    return [...this.expected.values()].filter((o) => !o.deleted).map((o) => o.name);
  }

  /** Live objects whose latest size has a completed run: deleting them cannot lose a change. */
  handled(): string[] {
    const done = readLedger(this.ledger).filter((e) => e.at === 'done' && e.kind !== 'delete');
    return this.live().filter((name) =>
      done.some((e) => e.name === name && e.size === this.expected.get(name)!.sizes.at(-1)),
    );
  }

  /** Up to `count` distinct names from `names`, chosen at random. */
  /**
   * Two creates and three resizes at once through `widgets`; resolves once the operator has started a
   * run of them, so a fault injected next lands while it is busy.
   */
  async burst(widgets: Widgets, what: string): Promise<void> {
    const runStarts = (): number => readLedger(this.ledger).filter((e) => e.at === 'start').length;
    const before = runStarts();
    await Promise.all([
      this.create(widgets),
      this.create(widgets),
      ...this.pick(this.live(), 3).map((name) => this.resize(widgets, name)),
    ]);
    await waitFor(() => runStarts() > before, { what, intervalMs: 10 });
  }

  pick(names: readonly string[], count: number): string[] {
    const pool = [...names];
    return Array.from(
      { length: Math.min(count, pool.length) },
      () => pool.splice(this.random.int(0, pool.length - 1), 1)[0]!,
    );
  }

  /** Objects not (yet) as they should end up: deleted ones still there, live ones whose status misses the latest size. */
  async unsettled(kc: KubeConfig, namespace: string): Promise<string[]> {
    const ids = {
      group: widgetResource.group,
      version: widgetResource.version,
      plural: widgetResource.plural,
    };
    const list = (await kc
      .makeApiClient(CustomObjectsApi)
      .listNamespacedCustomObject({ ...ids, namespace })) as { items: Widget[] };
    const widgets = new Map(list.items.map((w) => [w.metadata!.name!, w]));
    return [...this.expected.values()]
      .filter((o) =>
        o.deleted
          ? widgets.has(o.name)
          : widgets.get(o.name)?.status?.handledSize !== o.sizes.at(-1),
      )
      .map((o) => o.name);
  }

  private async write(call: () => Promise<unknown>, landedStatus?: number): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (let attempt = 0; ; attempt++) {
      try {
        await call();
        return;
      } catch (error) {
        if (attempt > 0 && landedStatus !== undefined && statusOf(error) === landedStatus) return;
        if (!this.options.persist || Date.now() > deadline) throw error;
        await sleep(500);
      }
    }
  }
}
