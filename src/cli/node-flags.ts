// What bin/konductor asks before it starts node: the node flags a command needs from the start.
// Only the heap's size, for `run` and `dev` (dev's operator children inherit node's flags).
import { parseCommandLine } from './command-line.js';
import { heapFlags, memoryLimit } from './heap-size.js';

/**
 * The node flags for this command line: the heap's size for `run` and `dev`, nothing for the
 * other commands or for a command line that does not parse (the command itself reports that).
 */
export function nodeFlagsFor(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  limitBytes: number | undefined = memoryLimit(),
  execArgv: readonly string[] = process.execArgv,
): string[] {
  let command;
  try {
    command = parseCommandLine(argv, env);
  } catch {
    return [];
  }
  if (command.kind !== 'run' && command.kind !== 'dev') return [];
  return heapFlags({
    limitBytes,
    maxHeapMiB: command.options.maxHeap,
    nodeOptions: env.NODE_OPTIONS,
    execArgv,
  });
}
