import { spawn } from 'node:child_process';

/** What a command printed and how it ended. */
export interface CommandResult {
  /** The exit code; -1 when a signal ended the command. */
  code: number;
  /** What it wrote to stdout. */
  stdout: string;
  /** What it wrote to stderr. */
  stderr: string;
}

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Text written to its standard input (closed after it). */
  stdin?: string;
  /** SIGKILL after this long (default 30 s); stderr then says so. */
  timeoutMs?: number;
}

/** Runs a program to its end; a program that cannot start fails with the reason. */
export function runCommand(
  program: string,
  args: readonly string[],
  options: RunCommandOptions = {},
): Promise<CommandResult> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const child = spawn(program, [...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`${program} did not start: ${error.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code: code ?? -1,
        stdout,
        stderr: signal ? `${stderr}\nkilled by ${signal} after ${timeoutMs} ms` : stderr,
      });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
  });
}
