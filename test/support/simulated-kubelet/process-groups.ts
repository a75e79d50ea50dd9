import type { ChildProcess } from 'node:child_process';
import { killGroup } from '../../../src/testing/managed-process.js';
import { registerPid, startReaper } from '../../../src/testing/process-reaper.js';

/**
 * The process groups the simulated kubelet started and that have not exited yet, so that no way out
 * of this process leaves one behind: a synchronous exit hook kills them, and with a reaper folder the
 * kit's detached reaper kills them should this process itself be killed.
 */
export class ProcessGroups {
  private readonly children = new Set<ChildProcess>();
  private readonly onExit = (): void => this.killAllNow();

  /** `reaperDir`: the folder a reaper guards (and removes); none for a folder the caller owns. */
  constructor(private readonly reaperDir: string | undefined) {}

  /** Starts guarding: the reaper, when there is a folder for it, and the exit hook. */
  guard(): void {
    if (this.reaperDir !== undefined) startReaper(this.reaperDir);
    process.once('exit', this.onExit);
  }

  /** Removes the exit hook, once every group has been stopped. */
  release(): void {
    process.off('exit', this.onExit);
  }

  /** Tracks a process group until it exits. */
  add(child: ChildProcess): void {
    if (child.pid === undefined) return;
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    if (this.reaperDir !== undefined) registerPid(this.reaperDir, child.pid);
  }

  /** On process exit: synchronous, so only signals. */
  private killAllNow(): void {
    for (const child of this.children) if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
  }
}
