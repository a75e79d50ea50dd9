import { spawn, type ChildProcess } from 'node:child_process';
import type { ApiClient } from '../../src/framework/api/api-client.js';
import { killGroup } from '../../src/testing/managed-process.js';

/** A `konductor` child process and what it printed. */
export interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  exited: Promise<number | string>;
}

/** The environment without any KONDUCTOR_* settings, so a child sees only the flags a test gives it. */
export function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('KONDUCTOR_')),
  );
}

/**
 * Starts `node <launcher> <args>` in `cwd`; `detached` gives it its own process group (kill the group);
 * `env` adds variables to the clean environment.
 */
export function spawnKonductor(
  launcher: string,
  args: readonly string[],
  options: { cwd: string; detached?: boolean; env?: NodeJS.ProcessEnv },
): Run {
  const env = { ...cleanEnv(), ...options.env };
  const child = spawn(process.execPath, [launcher, ...args], {
    cwd: options.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** The exit code, or a failure that shows what the process printed when it does not exit in time. */
export async function exitWithin(run: Run, ms: number): Promise<number | string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`konductor did not exit within ${ms} ms; stderr: ${run.stderr()}`)),
      ms,
    );
  });
  try {
    return await Promise.race([run.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Kills a running child's whole process group (it was spawned `detached`), or the child alone. */
export function killChildGroup(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  killGroup(child.pid, 'SIGKILL');
}

/**
 * Kills the `konductor` processes a spec file started that still run, then deletes the
 * ValidatingWebhookConfigurations named for `identities`: they are cluster-scoped, and one left
 * behind would call a dead server for the files that share this control plane.
 */
export async function endWebhookRuns(
  api: ApiClient,
  children: ChildProcess[],
  identities: readonly string[],
): Promise<void> {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  const configurations = api.resource(
    'admissionregistration.k8s.io/v1',
    'validatingwebhookconfigurations',
  );
  for (const name of identities) await configurations.delete({ name });
}
