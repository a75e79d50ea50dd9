import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

/** File in a control plane's folder listing the process ids the reaper must kill. */
const PID_FILE = 'pids';

// Runs in a detached `node -e` process so it outlives a test runner killed by SIGKILL or Ctrl-C.
// It polls the owner; once the owner is gone it kills every listed process group and removes the folder.
// If the folder disappears first (a clean stop), it simply exits.
const REAPER_SOURCE = `
const fs = require('fs'); const path = require('path');
const [owner, dir] = process.argv.slice(1);
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
const tick = () => {
  if (!fs.existsSync(dir)) process.exit(0);
  if (alive(Number(owner))) return;
  let pids = [];
  try { pids = fs.readFileSync(path.join(dir, '${PID_FILE}'), 'utf8').split('\\n').filter(Boolean).map(Number); } catch {}
  for (const pid of pids) { try { process.kill(-pid, 'SIGKILL'); } catch {} try { process.kill(pid, 'SIGKILL'); } catch {} }
  setTimeout(() => { try { fs.rmSync(dir, { recursive: true, force: true }); } catch {} process.exit(0); }, 300);
};
setInterval(tick, 250);
`;

/**
 * Starts a detached reaper guarding `dir` for the current process: should this process die (even by
 * SIGKILL), the reaper kills every process group recorded with {@link registerPid} and removes `dir`.
 * Removing `dir` on a clean stop lets the reaper exit.
 */
export function startReaper(dir: string): void {
  const child = spawn(process.execPath, ['-e', REAPER_SOURCE, String(process.pid), dir], {
    detached: true,
    stdio: 'ignore',
  });
  child.unref();
}

/** Records a process (a group leader, spawned `detached`) the reaper of `dir` must kill if the owner dies. */
export function registerPid(dir: string, pid: number): void {
  appendFileSync(join(dir, PID_FILE), `${pid}\n`);
}
