// The temporary folders compiled handler files live in. Each is removed when its process exits; a
// process killed outright (SIGKILL, the OOM killer, a power cut) leaves its folder behind, so the next
// start removes folders whose process is gone. The folder names the process that made it.
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PREFIX = 'konductor-handlers-';
const NAME = /^konductor-handlers-(\d+)-[A-Za-z0-9]+$/;

/** A new folder for this process's compiled handler files, in `parent` (the system's temporary folder). */
export function makeHandlerFolder(parent: string = tmpdir()): string {
  return mkdtempSync(join(parent, `${PREFIX}${process.pid}-`));
}

/** Whether a process with this id runs (or exists under another user, which counts as running). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the handler folders in `parent` that the current user owns and whose process no longer
 * runs; returns how many. Anything else there is left alone: another user's folders, links, a folder
 * of this process id (a container's PID 1 again), names that are not ours. Never throws.
 */
export function sweepHandlerFolders(
  parent: string = tmpdir(),
  isRunning: (pid: number) => boolean = running,
): number {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return 0;
  }
  const uid = process.getuid?.();
  let removed = 0;
  for (const name of names) {
    const pid = Number(NAME.exec(name)?.[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || isRunning(pid)) continue;
    const path = join(parent, name);
    try {
      const stat = lstatSync(path);
      if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue;
      rmSync(path, { recursive: true, force: true });
      removed++;
    } catch {
      // Gone meanwhile, or not ours to remove: either way nothing to do.
    }
  }
  return removed;
}
