// `konductor dev <files>`: `konductor run` in a child process, started again with fresh code on
// every change to the watched files. A child process rather than re-importing in this one: ES
// modules cannot be unloaded, and a cache-busting import reloads only the file itself, not the
// helpers it imports (tsx's namespaced import reloads them, but also a second copy of konductor,
// whose classes `instanceof` checks would then not recognise).
import { spawn, type ChildProcess } from 'node:child_process';
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { createLogger, type Logger } from '../../framework/observability/logger.js';
import { DEV_DEBOUNCE_MS, type RunOptions } from '../options/run.js';
import {
  DEV_BOOTED_MESSAGE,
  DEV_CHILD_ENV,
  DEV_READY_MESSAGE,
  DEV_START_MESSAGE,
} from './dev-protocol.js';

/** After SIGTERM, how long the child may drain before a second SIGTERM makes it exit at once. */
const DRAIN_MS = 5_000;
/** After the second SIGTERM, how long before SIGKILL. */
const KILL_AFTER_MS = 2_000;

/** One started operator, as the {@link Reloader} sees it. */
export interface OperatorProcess {
  /** Resolves once the operator finished its initial listings (never, when it fails to start). */
  ready: Promise<void>;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  /** Stops it cleanly (escalating when it does not drain in time); resolves once it has exited. */
  stop(): Promise<void>;
}

/** What the reloader logs; a pino logger fits. */
export type DevLog = Pick<Logger, 'info' | 'warn' | 'debug'>;

/**
 * Starts the operator, and after changes (debounced: one restart per burst of saves) stops it and
 * starts it again, one restart at a time. Logs `reloaded in N ms`, from the first change of the burst
 * to the new operator's initial listings being done.
 */
export class Reloader {
  private current: OperatorProcess | undefined;
  private timer: NodeJS.Timeout | undefined;
  private firstChangeAt: number | undefined;
  private readonly changedFiles = new Set<string>();
  private cycle: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly startOperator: () => OperatorProcess,
    private readonly log: DevLog,
    private readonly debounceMs = DEV_DEBOUNCE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Starts the first operator. */
  start(): void {
    this.launch(undefined);
  }

  /** A watched file changed (`file` as the watcher reported it). */
  changed(file: string): void {
    if (this.stopped) return;
    this.firstChangeAt ??= this.now();
    this.changedFiles.add(file);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.reload(), this.debounceMs);
  }

  /** Stops watching for reloads and stops the running operator. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.cycle;
    const last = this.current;
    this.current = undefined;
    await last?.stop();
  }

  private reload(): void {
    const since = this.firstChangeAt ?? this.now();
    const files = [...this.changedFiles];
    this.firstChangeAt = undefined;
    this.changedFiles.clear();
    this.cycle = this.cycle.then(async () => {
      if (this.stopped) return;
      const old = this.current;
      this.current = undefined;
      await old?.stop();
      if (!this.stopped) this.launch({ since, files });
    });
  }

  private launch(reload: { since: number; files: string[] } | undefined): void {
    const startedAt = reload?.since ?? this.now();
    const operator = this.startOperator();
    this.current = operator;
    void operator.ready.then(() => {
      if (this.current !== operator) return;
      const ms = Math.round(this.now() - startedAt);
      if (reload) this.log.info({ ms, changed: reload.files }, `reloaded in ${ms} ms`);
      else this.log.info({ ms }, `started in ${ms} ms; watching the handler files for changes`);
    });
    void operator.exited.then((code) => {
      // An operator we stopped is no longer current; this one stopped by itself (a file that fails to load, a crash).
      if (this.current !== operator) return;
      this.current = undefined;
      this.log.warn({ code }, 'the operator exited; it starts again at the next change');
    });
  }
}

/** A folder to watch, and whether its subfolders count. */
export interface WatchTarget {
  dir: string;
  recursive: boolean;
}

/**
 * What to watch for the given handler paths: a folder with everything below it; for a file, its
 * folder (not below it: a file at a project's root would otherwise watch node_modules), because
 * editors save by replacing the file, which ends a watch on the file itself, and because the
 * helpers it imports usually sit next to it.
 */
export async function watchTargets(paths: readonly string[]): Promise<WatchTarget[]> {
  const targets = new Map<string, WatchTarget>();
  for (const path of paths) {
    const absolute = resolve(path);
    const info = await stat(absolute).catch(() => undefined);
    if (!info) throw new Error(`${path} does not exist`);
    const target = info.isDirectory()
      ? { dir: absolute, recursive: true }
      : { dir: dirname(absolute), recursive: false };
    const known = targets.get(target.dir);
    targets.set(target.dir, {
      dir: target.dir,
      recursive: target.recursive || known?.recursive === true,
    });
  }
  return [...targets.values()];
}

const MODULE_FILE = /\.(m|c)?(ts|js)$|\.json$/;
const IGNORED_FILE = /\.d\.(m|c)?ts$|\.test\.|^package-lock\.json$/;

/** Whether a change the watcher reported (a path relative to the watched folder) may change the handlers. */
export function isWatchedChange(file: string | null): boolean {
  // Some platforms do not say which file changed: restart to be safe.
  if (file === null) return true;
  const segments = file.split(/[\\/]/);
  const name = segments.at(-1) ?? '';
  if (segments.some((segment) => segment === 'node_modules' || segment.startsWith('.')))
    return false;
  return MODULE_FILE.test(name) && !IGNORED_FILE.test(name);
}

/** The child's arguments: `run` with the same arguments, and the standalone choice made explicit (dev's default differs). */
export function childArguments(
  runArgs: readonly string[],
  options: Pick<RunOptions, 'standalone'>,
): string[] {
  return ['run', options.standalone ? '--standalone' : '--no-standalone', ...runArgs];
}

/** A booted `konductor run` child that waits for {@link DEV_START_MESSAGE}. */
export interface BootedChild {
  child: ChildProcess;
  /** Resolves once node, tsx and konductor are loaded and the child waits for the start message. */
  booted: Promise<void>;
  ready: Promise<void>;
  exited: Promise<number | string>;
}

/** Starts `konductor run` as a child (same node, same launcher) in its own process group; it waits to be told to start. */
function bootChild(args: readonly string[]): BootedChild {
  const launcher = process.argv[1];
  if (launcher === undefined)
    throw new Error('cannot tell how konductor was started (no script in process.argv)');
  const child = spawn(process.execPath, [...process.execArgv, launcher, ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [DEV_CHILD_ENV]: '1' },
    // Its own process group: Ctrl-C reaches only us, and we stop the child once, cleanly.
    detached: true,
  });
  const exited = new Promise<number | string>((done) =>
    child.once('exit', (code, signal) => done(code ?? signal ?? 'unknown')),
  );
  let markBooted!: () => void;
  let markReady!: () => void;
  const booted = new Promise<void>((done) => (markBooted = done));
  const ready = new Promise<void>((done) => (markReady = done));
  child.on('message', (message) => {
    if (message === DEV_BOOTED_MESSAGE) markBooted();
    if (message === DEV_READY_MESSAGE) markReady();
  });
  return { child, booted, ready, exited };
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null && child.connected;
}

/**
 * Starts operators from a booted spare, and boots the next spare once the new operator is ready (not
 * before: on two cores the boot would slow the start it is meant to speed up). Booting node, tsx and
 * konductor takes most of a start; with a spare a reload only loads the handler files and lists.
 */
export class WarmStarter {
  private spare: BootedChild | undefined;
  private closed = false;

  constructor(
    private readonly args: readonly string[],
    private readonly log: Pick<DevLog, 'debug'>,
    private readonly boot: (args: readonly string[]) => BootedChild = bootChild,
  ) {}

  /** Starts an operator (the spare, if it is still alive). */
  start(): OperatorProcess {
    const booted = this.spare && alive(this.spare.child) ? this.spare : this.boot(this.args);
    this.spare = undefined;
    booted.child.send(DEV_START_MESSAGE);
    void Promise.race([booted.ready, booted.exited]).then(() => {
      if (this.closed || this.spare !== undefined) return;
      const spare = this.boot(this.args);
      this.spare = spare;
      void spare.booted.then(() => this.log.debug('a booted operator waits for the next change'));
    });
    return {
      ready: booted.ready,
      exited: booted.exited,
      stop: () => stopChild(booted.child, booted.exited),
    };
  }

  /** Ends the spare (it has not started an operator: nothing to drain). */
  close(): void {
    this.closed = true;
    if (this.spare && alive(this.spare.child)) this.spare.child.kill('SIGTERM');
    this.spare = undefined;
  }
}

async function stopChild(child: ChildProcess, exited: Promise<number | string>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const escalate = (ms: number, signal: NodeJS.Signals): NodeJS.Timeout =>
    setTimeout(() => child.kill(signal), ms).unref();
  child.kill('SIGTERM');
  // A second SIGTERM makes `konductor run` exit without waiting for handlers still running.
  const second = escalate(DRAIN_MS, 'SIGTERM');
  const kill = escalate(DRAIN_MS + KILL_AFTER_MS, 'SIGKILL');
  try {
    await exited;
  } finally {
    clearTimeout(second);
    clearTimeout(kill);
  }
}

/** `konductor dev`: runs the operator, restarts it on changes, and stops it on SIGINT/SIGTERM. */
export async function dev(options: RunOptions, runArgs: readonly string[]): Promise<void> {
  const logger = createLogger({ level: options.logLevel, format: options.logFormat });
  const targets = await watchTargets(options.files);
  const starter = new WarmStarter(childArguments(runArgs, options), logger);
  const reloader = new Reloader(() => starter.start(), logger);
  const watchers: FSWatcher[] = targets.map((target) =>
    watch(target.dir, { recursive: target.recursive }, (_event, file) => {
      if (isWatchedChange(file)) reloader.changed(file ?? target.dir);
    }).on('error', (error) =>
      logger.warn(
        { err: error, dir: target.dir },
        'watching a folder failed; changes in it are not seen',
      ),
    ),
  );
  reloader.start();

  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) process.exit(130);
    stopping = true;
    logger.info({ signal }, 'stopping');
    for (const watcher of watchers) watcher.close();
    starter.close();
    reloader.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
