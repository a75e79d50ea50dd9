import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { registerPid } from './process-reaper.js';
import { ReadinessError, waitUntilReady, type ReadinessAnswer } from './readiness-wait.js';

/** How much longer than its stall window a start that keeps making progress may take. */
const CEILING_FACTOR = 10;

/** A long-running program of the control plane: started detached, logged to a file, stopped with its group. */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    /** The program's name in errors and logs (`etcd`, `kube-apiserver`). */
    readonly name: string,
    private readonly command: string,
    private readonly args: readonly string[],
    private readonly logFile: string,
    private readonly reaperDir: string,
  ) {}

  /** The process id while it runs; undefined before the start and after it exited. */
  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null
      ? this.child.pid
      : undefined;
  }

  /** Whether the process runs. */
  get running(): boolean {
    return this.pid !== undefined;
  }

  /**
   * Starts the program and waits until `ready()` answers true, for as long as it makes progress: it
   * fails (with the log's tail) after `timeoutMs` without a new answer or new log output, or after ten
   * times `timeoutMs` in all. An answer with `seen` says what the check saw, for the error.
   */
  async start(ready: () => Promise<boolean | ReadinessAnswer>, timeoutMs: number): Promise<void> {
    if (this.running) throw new Error(`${this.name} is already running (pid ${this.pid})`);
    const fd = openSync(this.logFile, 'a');
    // Detached: a group of its own, so Ctrl-C on the test runner does not hit it and the reaper can kill the group.
    const child = spawn(this.command, [...this.args], {
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.once('error', () => undefined);
    child.unref();
    if (child.pid !== undefined) registerPid(this.reaperDir, child.pid);
    try {
      await waitUntilReady({
        name: this.name,
        check: async () => {
          const answer = await ready();
          return typeof answer === 'boolean'
            ? { ready: answer, seen: answer ? 'ready' : 'not ready' }
            : answer;
        },
        alive: () => this.running,
        progress: () => this.logSize(),
        stallMs: timeoutMs,
        ceilingMs: CEILING_FACTOR * timeoutMs,
      });
    } catch (error) {
      if (!(error instanceof ReadinessError)) throw error;
      await this.stop();
      throw new Error(`${error.message}:\n${this.logTail()}`, { cause: error });
    }
  }

  private logSize(): number {
    try {
      return statSync(this.logFile).size;
    } catch {
      return 0;
    }
  }

  /** Sends `signal` to the process group and waits for exit; escalates to SIGKILL after `graceMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 5_000): Promise<void> {
    const pid = this.pid;
    if (pid === undefined) return;
    await stopGroup(pid, this.exited, signal, graceMs);
  }

  /** Sends a signal without waiting (SIGSTOP/SIGCONT for stall tests). */
  signal(signal: NodeJS.Signals): void {
    const pid = this.pid;
    if (pid !== undefined) killGroup(pid, signal);
  }

  /** The last `lines` lines of its log, for error messages; `(no log)` when there is none. */
  logTail(lines = 30): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/** Signals a process group (a child spawned `detached`), or the process alone when it leads none. */
export function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/**
 * Sends `signal` to a process group and resolves once `exited` does; sends SIGKILL when the group's
 * leader has not exited after `graceMs`.
 */
export async function stopGroup(
  pid: number,
  exited: Promise<void>,
  signal: NodeJS.Signals,
  graceMs: number,
): Promise<void> {
  killGroup(pid, signal);
  const grace = new AbortController();
  const done = await Promise.race([
    exited.then(() => true),
    sleep(graceMs, false, { signal: grace.signal }).catch(() => false),
  ]);
  grace.abort(); // don't let a pending grace timer keep the caller's process alive
  if (!done) {
    killGroup(pid, 'SIGKILL');
    await exited;
  }
}
