import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveKubectl } from '../../src/testing/binaries.js';
import { runCommand } from '../../src/testing/run-command.js';

/** What one kubectl run printed and how it ended. */
export interface KubectlRun {
  code: number;
  stdout: string;
  stderr: string;
}

const cacheDir = mkdtempSync(join(tmpdir(), 'konductor-kubectl-'));

/** Runs a program to its end (killed after 30 s); a program that cannot start fails with the reason. */
export function runProgram(
  program: string,
  args: readonly string[],
  stdin = '',
): Promise<KubectlRun> {
  return runCommand(program, args, { stdin });
}

/**
 * Runs the provisioned kubectl against this worker's control plane, as a user types it (`stdin`
 * for `apply -f -`); a cache of its own, so no discovery goes stale between files.
 */
export function kubectl(args: readonly string[], stdin = ''): Promise<KubectlRun> {
  const kubeconfig = process.env.KONDUCTOR_TEST_KUBECONFIG;
  if (!kubeconfig)
    throw new Error(
      'KONDUCTOR_TEST_KUBECONFIG is not set: run integration tests through jest (npm run test:integration)',
    );
  return runProgram(
    resolveKubectl(),
    ['--kubeconfig', kubeconfig, '--cache-dir', cacheDir, ...args],
    stdin,
  );
}

/** `kubectl apply -f -` of one object given as JSON (kubectl reads JSON as YAML). */
export function kubectlApply(object: unknown, extra: readonly string[] = []): Promise<KubectlRun> {
  return kubectl(['apply', '-f', '-', ...extra], JSON.stringify(object));
}
