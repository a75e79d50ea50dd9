// How a command declares its flags, once: the declaration gives node's parseArgs its options, the
// help and the Markdown reference their text (./help.ts), and the parsing its environment variables
// and defaults. node:util parseArgs rather than commander or citty: the `KONDUCTOR_*` fallback, the
// one-line messages and exit code 2 are ours either way, and neither would document the variables.
import { parseArgs } from 'node:util';
import { UsageError, boolean, type Setting } from './validators.js';

/** One flag of a command, named by its key in the command's {@link FlagTable} (`log-level`). */
export interface Flag<T = unknown> {
  /** Single-letter alias: `n` for `-n`. */
  readonly short?: string;
  /** Placeholder of its value in the help (`<n>`); a flag without one is a switch. */
  readonly value?: string;
  /** May be repeated; every value is kept, in order. */
  readonly multiple?: boolean;
  /** What it does: sentences without the last period (the help appends the default, then one). */
  readonly description: string;
  /**
   * Also read from `KONDUCTOR_<NAME>` when the flag is not given; a string says how the variable is
   * written (a repeatable flag's variable is comma-separated).
   */
  readonly env?: true | string;
  /** Used when neither the flag nor its variable is set: written as on the command line, and checked as such. */
  readonly default?: string;
  /** What leaving it unset means when that is no value of the flag (`all namespaces`); documentation only. */
  readonly defaultNote?: string;
  /** Checks and converts one value (each value of a repeatable flag); without it the text as given. */
  readonly parse?: (setting: Setting) => T;
}

/** The flags of a command, in the order the help lists them. */
export type FlagTable = Readonly<Record<string, Flag>>;

/** A command's usage, help text and flags. */
export interface CommandSpec<F extends FlagTable = FlagTable> {
  /** The command word. */
  readonly name: string;
  /** Its arguments in the usage line: `<file|folder>...`. */
  readonly args: string;
  /** Where its output usually goes, shown as `> <output>` in the usage line. */
  readonly output?: string;
  /** One sentence for the overview (`konductor --help`). */
  readonly summary: string;
  /** Paragraphs between the usage line and the flags, as written. */
  readonly description: string;
  /** Paragraphs after the flags (exit codes, next steps), as written. */
  readonly footer?: string;
  /** Switches also take `--no-<name>`, which overrides a variable that turned one on. */
  readonly negatable?: boolean;
  /** The help that parse errors point at; default `konductor <name> --help`. */
  readonly seeHelp?: string;
  readonly flags: F;
}

type One<F> = F extends { readonly parse: (setting: Setting) => infer T }
  ? T
  : F extends { readonly value: string }
    ? string
    : boolean;
/** What reading a flag gives: its checked value, a list for a repeatable flag. */
export type FlagValue<F> = F extends { readonly multiple: true } ? Array<One<F>> : One<F>;
type WithDefault<F> = F extends { readonly default: string }
  ? FlagValue<F>
  : FlagValue<F> | undefined;

/** What parseArgs made of the command line. */
export interface ParsedArgs {
  values: Readonly<Record<string, string | boolean | Array<string | boolean> | undefined>>;
  positionals: string[];
}

/** The environment variable of a flag: `log-level` → `KONDUCTOR_LOG_LEVEL`. */
export function envName(flag: string): string {
  return `KONDUCTOR_${flag.toUpperCase().replace(/-/g, '_')}`;
}

/** The help that a spec's parse errors point at. */
export function seeHelp(spec: CommandSpec): string {
  return spec.seeHelp ?? `konductor ${spec.name} --help`;
}

/**
 * The command line parsed against the command's flags (and `extra` flags, accepted but undocumented
 * here: those of a sibling command, refused later with a better message).
 * @throws {@link UsageError} in one line, for unknown flags and missing or unwanted values.
 */
export function parseFlags(
  spec: CommandSpec,
  args: readonly string[],
  extra: FlagTable = {},
): ParsedArgs {
  const options = Object.fromEntries(
    Object.entries({ ...spec.flags, ...extra }).map(([name, flag]) => [
      name,
      {
        type: flag.value === undefined ? ('boolean' as const) : ('string' as const),
        ...(flag.short === undefined ? {} : { short: flag.short }),
        ...(flag.multiple ? { multiple: true } : {}),
      },
    ]),
  );
  try {
    return parseArgs({
      args: [...args],
      options,
      allowPositionals: true,
      allowNegative: spec.negatable === true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(describeParseError(error, spec));
  }
}

/** node's parseArgs messages are long and mention things we do not support; say it in one short line. */
function describeParseError(error: unknown, spec: CommandSpec): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  const option =
    /--[a-z][a-z-]*/.exec(message)?.[0] ?? /'(-[^'\s,]+)/.exec(message)?.[1] ?? 'an option';
  const see = `(see ${seeHelp(spec)})`;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION')
    return `unknown option '${/'([^']+)'/.exec(message)?.[1] ?? option}' ${see}`;
  if (/does not take an argument/.test(message)) {
    return spec.negatable
      ? `${option} takes no value (use --no-${option.slice(2)} to turn it off)`
      : `${option} takes no value`;
  }
  if (/argument missing/.test(message)) return `${option} needs a value ${see}`;
  if (/ambiguous/.test(message))
    return `${option} needs a value; to pass one starting with '-', write ${option}=<value>`;
  return `${message.split('\n')[0] ?? message} ${see}`;
}

/**
 * A command's flag values, each checked by its flag's `parse`: from the command line, else from its
 * `KONDUCTOR_*` variable (blank counts as unset), else its default.
 */
export class FlagReader<F extends FlagTable> {
  constructor(
    private readonly flags: F,
    private readonly values: ParsedArgs['values'],
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Whether the flag is on the command line (either way, for a switch). */
  given(name: keyof F & string): boolean {
    return this.values[name] !== undefined;
  }

  /** The flag's value from the command line; undefined when it is not there. */
  flag<K extends keyof F & string>(name: K): FlagValue<F[K]> | undefined {
    const value = this.values[name];
    if (value === undefined) return undefined;
    const source = `--${name}`;
    if (Array.isArray(value))
      return value.map((one) => this.one(name, one, source)) as FlagValue<F[K]>;
    return this.one(name, value, source) as FlagValue<F[K]>;
  }

  /** The value of the flag's environment variable; undefined when it has none, or it is unset or blank. */
  variable<K extends keyof F & string>(name: K): FlagValue<F[K]> | undefined {
    const flag = this.flags[name]!;
    if (!flag.env) return undefined;
    const source = envName(name);
    const raw = this.env[source]?.trim();
    if (raw === undefined || raw === '') return undefined;
    if (!flag.multiple) return this.one(name, raw, source) as FlagValue<F[K]>;
    const values = raw
      .split(',')
      .map((value) => value.trim())
      .filter((value) => value !== '');
    return values.map((value) => this.one(name, value, source)) as FlagValue<F[K]>;
  }

  /** The flag, else its variable, else its default (undefined without one). */
  get<K extends keyof F & string>(name: K): WithDefault<F[K]> {
    if (this.given(name)) return this.flag(name) as WithDefault<F[K]>;
    const fromEnv = this.variable(name);
    if (fromEnv !== undefined) return fromEnv as WithDefault<F[K]>;
    const fallback = this.flags[name]!.default;
    return (
      fallback === undefined ? undefined : this.one(name, fallback, `the default of --${name}`)
    ) as WithDefault<F[K]>;
  }

  private one(name: string, value: string | boolean, source: string): unknown {
    if (typeof value === 'boolean') return value;
    const flag = this.flags[name]!;
    if (flag.value === undefined) return boolean({ value, source });
    return flag.parse ? flag.parse({ value, source }) : value;
  }
}
