// What the `konductor` command line asks for: the command word is found first, then its own module
// in ./options/ reads the rest. Help and the flag reference are written from those modules' tables.
import { FlagReader, parseFlags, type CommandSpec, type FlagTable } from './flags.js';
import { commandHelp, commandList, flagLines, flagList, flagReference } from './help.js';
import { INIT, parseInit, type InitOptions } from './options/init.js';
import { MANIFESTS } from './options/manifests.js';
import {
  DISCONNECT,
  UNINSTALL,
  parseRelease,
  type DisconnectOptions,
  type UninstallOptions,
} from './options/release.js';
import { DEV, RUN, RUN_FLAGS, runOptions, type RunOptions } from './options/run.js';
import { TYPES } from './options/types.js';
import { UsageError } from './validators.js';

/** The commands of `konductor`. */
export const COMMANDS = [
  'run',
  'dev',
  'init',
  'types',
  'manifests',
  'disconnect',
  'uninstall',
] as const;
export type CommandName = (typeof COMMANDS)[number];

/** Every command's declaration, in the order the overview lists them. */
export const COMMAND_SPECS: Readonly<Record<CommandName, CommandSpec>> = {
  run: RUN,
  dev: DEV,
  init: INIT,
  types: TYPES,
  manifests: MANIFESTS,
  disconnect: DISCONNECT,
  uninstall: UNINSTALL,
};

/** The flags of `konductor` without a command. */
export const GLOBAL_FLAGS = {
  help: { short: 'h', description: "Show this help (konductor <command> --help: that command's)" },
  version: { description: 'Show the version' },
} satisfies FlagTable;

/** What the command line asks for. `help` without a command is the overview of every command. */
export type Command =
  | { kind: 'help'; command?: CommandName }
  | { kind: 'version' }
  | { kind: 'run'; options: RunOptions }
  /** `runArgs`: the arguments without the word `dev`, for the `konductor run` child it restarts. */
  | { kind: 'dev'; options: RunOptions; runArgs: string[] }
  | { kind: 'init'; options: InitOptions }
  /** `types` and `manifests` parse their own arguments (everything but the command's name). */
  | { kind: 'types' | 'manifests'; args: string[] }
  | { kind: 'disconnect'; options: DisconnectOptions }
  | { kind: 'uninstall'; options: UninstallOptions };

/**
 * Parses `konductor` arguments (without `node` and the script) plus `KONDUCTOR_*` variables.
 * @throws {@link UsageError} with a one-line message naming the flag (or variable) and what it allows.
 */
export function parseCommandLine(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Command {
  const found = findCommand(argv);
  const rest = found ? [...argv.slice(0, found.index), ...argv.slice(found.index + 1)] : [...argv];
  switch (found?.name) {
    case 'init': {
      const init = parseInit(rest);
      return init.help
        ? { kind: 'help', command: 'init' }
        : { kind: 'init', options: init.options };
    }
    case 'types':
    case 'manifests':
      return { kind: found.name, args: rest };
    case 'help':
      return parseHelpCommand(rest);
    case 'disconnect':
    case 'uninstall': {
      const release = parseRelease(found.name, rest, env);
      return release.kind === 'help' ? { kind: 'help', command: found.name } : release;
    }
  }
  return parseRunLike(argv, rest, env);
}

/** `konductor run|dev ...`, and `konductor` with no command (`--help`, `--version`, or a mistake). */
function parseRunLike(argv: readonly string[], runArgs: string[], env: NodeJS.ProcessEnv): Command {
  const { values, positionals } = parseFlags(RUN, argv, { version: GLOBAL_FLAGS.version });
  const [command, ...files] = positionals;
  const runLike = command === 'run' || command === 'dev' ? command : undefined;
  if (values.help) return { kind: 'help', command: runLike };
  if (values.version) return { kind: 'version' };
  if (command === undefined) {
    throw new UsageError(
      "no command given: use 'konductor init <dir>' for a new project or 'konductor run <file|folder>...' " +
        '(see konductor --help)',
    );
  }
  if (runLike === undefined)
    throw new UsageError(
      `unknown command '${command}': use ${COMMANDS.join(', ')} (see konductor --help)`,
    );
  if (files.length === 0) {
    throw new UsageError(
      `${runLike} needs at least one handler file or folder: konductor ${runLike} <file|folder>...`,
    );
  }
  // dev's flags are run's but for the default of --standalone.
  const spec = runLike === 'run' ? RUN : DEV;
  const options = runOptions(new FlagReader(spec.flags, values, env), files);
  return runLike === 'run' ? { kind: 'run', options } : { kind: 'dev', options, runArgs };
}

/**
 * The command word and where it stands: the first argument that is neither an option nor the value
 * of one (`run`'s options may come before it, as they always could: `konductor -n ns run x.ts`).
 */
function findCommand(argv: readonly string[]): { name: string; index: number } | undefined {
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!;
    if (arg === '--')
      return index + 1 < argv.length ? { name: argv[index + 1]!, index: index + 1 } : undefined;
    if (!arg.startsWith('-') || arg === '-') return { name: arg, index };
    if (takesValue(arg)) index++;
  }
  return undefined;
}

/** Whether a run option is written with its value in the next argument (`--context x`, `-n x`). */
function takesValue(arg: string): boolean {
  const flags: FlagTable = RUN_FLAGS;
  if (arg.startsWith('--')) {
    const name = arg.slice(2);
    return !name.includes('=') && flags[name]?.value !== undefined;
  }
  // `-n` alone; `-nteam` carries its value.
  return (
    arg.length === 2 &&
    Object.values(flags).some((flag) => flag.short === arg[1] && flag.value !== undefined)
  );
}

/** `konductor help [command]`. */
function parseHelpCommand(args: readonly string[]): Command {
  const topic = args.find((arg) => !arg.startsWith('-'));
  if (topic === undefined) return { kind: 'help' };
  if (!(COMMANDS as readonly string[]).includes(topic)) {
    throw new UsageError(
      `unknown command '${topic}': use ${COMMANDS.join(', ')} (see konductor --help)`,
    );
  }
  return { kind: 'help', command: topic as CommandName };
}

/** The help of one command, or the overview of every command (with the flags of run and dev). */
export function helpFor(command: CommandName | undefined): string {
  if (command !== undefined) return commandHelp(COMMAND_SPECS[command]);
  const { help: _help, ...runFlags } = RUN_FLAGS;
  const lines = [
    'Usage: konductor <command> [arguments] [options]',
    '',
    'Commands:',
    ...commandList(Object.values(COMMAND_SPECS)),
    '',
    "Run 'konductor <command> --help' for the details of one command.",
    ...flagLines(GLOBAL_FLAGS),
    '',
    'Start a project:  konductor init my-operator && cd my-operator && npm install && npm test',
    '',
    'konductor run and konductor dev:',
    flagList(runFlags, RUN.negatable),
  ];
  return `${lines.join('\n')}\n`;
}

/** The Markdown reference of every command's flags (docs/reference/cli-flags.md). */
export function cliReference(): string {
  return flagReference(GLOBAL_FLAGS, Object.values(COMMAND_SPECS));
}
