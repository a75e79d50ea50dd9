import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';

export type ExitOutcome = { code: number | null; signal: NodeJS.Signals | null } | { error: Error };

/** The first of 'exit' or a spawn 'error' (after which 'exit' may never come). */
export function exitOf(child: ChildProcess): Promise<ExitOutcome> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ error }));
  });
}

/** A container's exit code as a kubelet reports it: 128 plus the signal's number for a killed process. */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  return code ?? 128 + (signalNumber(signal) ?? 0);
}

export function signalNumber(signal: NodeJS.Signals | null): number | undefined {
  return signal ? osConstants.signals[signal] : undefined;
}

/** The end of a container's log, for its termination message; empty when there is none. */
export function tailOf(file: string, chars = 2_000): string {
  try {
    return readFileSync(file, 'utf8').trim().slice(-chars);
  } catch {
    return '';
  }
}
