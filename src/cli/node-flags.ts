// What bin/konductor asks before it starts node: the node flags a command needs from the start.
// The heap's size, for `run` and `dev` (dev's operator children inherit node's flags), and for `run`
// TurboFan paused until its listings are done (dev's children pause it themselves: an inherited flag
// would not be known as the launcher's).
import { parseCommandLine } from './command-line.js';
import { heapFlags, memoryLimit } from './heap-size.js';
import { PAUSED_FLAG, startupCompiler } from './optimizing-compiler.js';

/**
 * The node flags for this command line: the heap's size for `run` and `dev`, and TurboFan paused for
 * `run` unless the user chose compiler flags; nothing for the other commands or for a command line
 * that does not parse (the command itself reports that).
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
  const heap = heapFlags({
    limitBytes,
    maxHeapMiB: command.options.maxHeap,
    nodeOptions: env.NODE_OPTIONS,
    execArgv,
  });
  const pause =
    command.kind === 'run' &&
    startupCompiler({ nodeOptions: env.NODE_OPTIONS, execArgv }) === 'pause';
  return pause ? [...heap, PAUSED_FLAG] : heap;
}
