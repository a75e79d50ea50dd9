import { parseArgs } from 'node:util';
import type { LogFormat } from '../framework/observability/logger.js';
import { DEFAULT_HANDLER_STALL_MS } from '../framework/runtime/operator.js';

/** Log levels accepted by `--log-level` (pino's, plus `silent`). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Formats accepted by `--log-format`. */
export const LOG_FORMATS = ['json', 'pretty', 'auto'] as const satisfies readonly LogFormat[];

/** Everything `konductor run` was asked to do, from flags and `KONDUCTOR_*` environment variables. */
export interface RunOptions {
  /** Handler files or folders, as given (relative to the working directory). */
  files: string[];
  /** Namespace names or globs (`*`, `?`); empty means all namespaces. */
  namespaces: string[];
  /** `--all-namespaces` was asked for explicitly (same effect as no `--namespace`). */
  allNamespaces: boolean;
  /** kubeconfig context to use instead of the current one. */
  context?: string;
  /** kubeconfig file; default: KUBECONFIG, ~/.kube/config, or in-cluster. */
  kubeconfig?: string;
  /** Objects handled at once; the operator's default when undefined. */
  concurrency?: number;
  /** Time limit of one handler attempt in seconds; undefined (or 0) means none. */
  handlerTimeout?: number;
  /** `/healthz` fails when work waits this many seconds with no handler run finishing; 0 turns it off; the operator's default (300) when undefined. */
  stallTimeout?: number;
  logLevel: LogLevel;
  logFormat: LogFormat;
  /** Port of the health/metrics server (0: any free port). */
  healthPort: number;
  /** Run without leader election. */
  standalone: boolean;
  /** Namespace of the leader-election Lease; default: the operator's own namespace. */
  leaseNamespace?: string;
  /** Name of the leader-election Lease. */
  leaseName: string;
}

/** What the command line asks for. */
export type Command = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; options: RunOptions };

/** Bad command-line input or environment; the CLI prints its one-line message and exits with code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const DEFAULT_HEALTH_PORT = 8080;
export const DEFAULT_LEASE_NAME = 'konductor-leader';
/** Seconds; the operator's default, shown in the help. */
export const DEFAULT_STALL_TIMEOUT = DEFAULT_HANDLER_STALL_MS / 1000;
/** Upper bound for durations in seconds (about 31 years): anything above is a typo. */
const MAX_SECONDS = 1_000_000_000;

const ENV_PREFIX = 'KONDUCTOR_';

/** The environment variable for a long option: `log-level` → `KONDUCTOR_LOG_LEVEL`. */
export function envName(option: string): string {
  return ENV_PREFIX + option.toUpperCase().replace(/-/g, '_');
}

const OPTIONS = {
  namespace: { type: 'string', short: 'n', multiple: true },
  'all-namespaces': { type: 'boolean', short: 'A' },
  context: { type: 'string' },
  kubeconfig: { type: 'string' },
  concurrency: { type: 'string' },
  'handler-timeout': { type: 'string' },
  'stall-timeout': { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  'health-port': { type: 'string' },
  standalone: { type: 'boolean' },
  'lease-namespace': { type: 'string' },
  'lease-name': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** Help text for `konductor --help`: every option with its environment variable. */
export const HELP = `Usage: konductor run <file|folder>... [options]
       konductor --help | --version

Runs the handler classes (methods with @on.*, @timer or @daemon) exported by the given
TypeScript or JavaScript files against a Kubernetes cluster. Folders are searched recursively
for *.ts, *.mts, *.js and *.mjs files (not *.d.ts, *.test.*, or anything in node_modules).

Options (each may also come from the environment variable shown; flags win over the environment):
  -n, --namespace <name|glob>  Watch this namespace; repeat for more. '*' and '?' match names
                               (e.g. 'team-*'), also of namespaces created later; a glob
                               watches cluster-wide, so it needs cluster-wide list/watch.
                               Default: all namespaces.
                               env ${envName('namespace')} (comma-separated)
  -A, --all-namespaces         Watch all namespaces (cannot be combined with --namespace).
                               env ${envName('all-namespaces')}=true
      --context <name>         kubeconfig context to use instead of the current one.
                               env ${envName('context')}
      --kubeconfig <file>      kubeconfig file. Default: $KUBECONFIG, ~/.kube/config, or the
                               in-cluster service account.
                               env ${envName('kubeconfig')}
      --concurrency <n>        Handle at most n objects at once (positive integer; default 64).
                               env ${envName('concurrency')}
      --handler-timeout <s>    Abandon a handler attempt (change, @on.event or timer run) after s
                               seconds: its signal is aborted and it counts as a failure (change
                               handlers and timers retry as after any error). Daemons have no
                               limit. 0 or unset: no limit.
                               env ${envName('handler-timeout')}
      --stall-timeout <s>      /healthz fails when objects have waited s seconds for a handler slot
                               while no handler run finished (every slot hung), so the pod is
                               restarted. 0 turns the check off (default ${DEFAULT_STALL_TIMEOUT}).
                               env ${envName('stall-timeout')}
      --log-level <level>      ${LOG_LEVELS.join('|')} (default info).
                               env ${envName('log-level')}
      --log-format <format>    json|pretty|auto (default auto: pretty in a terminal, JSON otherwise).
                               env ${envName('log-format')}
      --health-port <port>     Port of the health and metrics server, 0-65535 (default ${DEFAULT_HEALTH_PORT}).
                               env ${envName('health-port')}
      --standalone             Run without leader election (only one replica may run).
                               env ${envName('standalone')}=true; --no-standalone overrides it
      --lease-namespace <ns>   Namespace of the leader-election Lease (default: the operator's own).
                               env ${envName('lease-namespace')}
      --lease-name <name>      Name of the leader-election Lease (default ${DEFAULT_LEASE_NAME}).
                               env ${envName('lease-name')}
  -h, --help                   Show this help.
      --version                Show the version.

Exit codes: 0 stopped cleanly (SIGINT/SIGTERM), 1 failed to start, 2 bad usage,
130 a second signal while stopping.
`;

/**
 * Parses `konductor` arguments (without `node` and the script) plus `KONDUCTOR_*` variables.
 * @throws {@link UsageError} with a one-line message naming the flag (or variable) and what it allows.
 */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Command {
  const { values, positionals } = parseFlags(argv);
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  const [command, ...files] = positionals;
  if (command === undefined) throw new UsageError("no command given: use 'konductor run <file|folder>...' (see konductor --help)");
  if (command !== 'run') throw new UsageError(`unknown command '${command}': the only command is 'run' (see konductor --help)`);
  if (files.length === 0) throw new UsageError('run needs at least one handler file or folder: konductor run <file|folder>...');

  const fromEnv = (option: keyof typeof OPTIONS): Setting | undefined => {
    const name = envName(option);
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : { value: value.trim(), source: name };
  };
  const flag = (option: keyof typeof OPTIONS, value: string | undefined): Setting | undefined =>
    value === undefined ? undefined : { value, source: `--${option}` };
  const pick = (option: keyof typeof OPTIONS, value: string | undefined): Setting | undefined => flag(option, value) ?? fromEnv(option);
  const pickBoolean = (option: keyof typeof OPTIONS, value: boolean | undefined): boolean => {
    if (value !== undefined) return value;
    const setting = fromEnv(option);
    return setting ? parseBoolean(setting) : false;
  };

  const scope = namespaceScope(values.namespace, values['all-namespaces'], fromEnv('namespace'), fromEnv('all-namespaces'));
  const concurrency = pick('concurrency', values.concurrency);
  const handlerTimeout = pick('handler-timeout', values['handler-timeout']);
  const stallTimeout = pick('stall-timeout', values['stall-timeout']);
  const healthPort = pick('health-port', values['health-port']);
  const logLevel = pick('log-level', values['log-level']);
  const logFormat = pick('log-format', values['log-format']);
  const leaseNamespace = pick('lease-namespace', values['lease-namespace']);
  const leaseName = pick('lease-name', values['lease-name']);
  return {
    kind: 'run',
    options: {
      files,
      ...scope,
      context: nonEmpty(pick('context', values.context)),
      kubeconfig: nonEmpty(pick('kubeconfig', values.kubeconfig)),
      concurrency: concurrency && parseInteger(concurrency, 1, Number.MAX_SAFE_INTEGER, 'a positive integer'),
      handlerTimeout: (handlerTimeout && parseInteger(handlerTimeout, 0, MAX_SECONDS, 'a whole number of seconds (0: no limit)')) || undefined,
      stallTimeout: stallTimeout && parseInteger(stallTimeout, 0, MAX_SECONDS, 'a whole number of seconds (0: off)'),
      logLevel: logLevel ? oneOf(logLevel, LOG_LEVELS) : 'info',
      logFormat: logFormat ? oneOf(logFormat, LOG_FORMATS) : 'auto',
      healthPort: healthPort ? parseInteger(healthPort, 0, 65_535, 'an integer from 0 to 65535') : DEFAULT_HEALTH_PORT,
      standalone: pickBoolean('standalone', values.standalone),
      leaseNamespace: leaseNamespace && dnsLabel(leaseNamespace, false),
      leaseName: leaseName ? dnsSubdomain(leaseName) : DEFAULT_LEASE_NAME,
    },
  };
}

export { isNamespaceGlob, matchNamespace } from '../framework/runtime/namespace-patterns.js';

/** A raw value and where it came from (`--flag` or `KONDUCTOR_VAR`), for error messages. */
interface Setting {
  value: string;
  source: string;
}

function parseFlags(argv: readonly string[]): ReturnType<typeof parseArgsStrict> {
  try {
    return parseArgsStrict(argv);
  } catch (error) {
    throw new UsageError(describeParseError(error));
  }
}

function parseArgsStrict(argv: readonly string[]) {
  return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, allowNegative: true, strict: true });
}

/** node's parseArgs messages are long and mention things we do not support; say it in one short line. */
function describeParseError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  const option = /--[a-z][a-z-]*/.exec(message)?.[0] ?? /'(-[^'\s,]+)/.exec(message)?.[1] ?? 'an option';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option '${/'([^']+)'/.exec(message)?.[1] ?? option}' (see konductor --help)`;
  if (/does not take an argument/.test(message)) return `${option} takes no value (use --no-${option.slice(2)} to turn it off)`;
  if (/argument missing/.test(message)) return `${option} needs a value (see konductor --help)`;
  if (/ambiguous/.test(message)) return `${option} needs a value; to pass one starting with '-', write ${option}=<value>`;
  return message.split('\n')[0] ?? message;
}

function namespaceScope(
  flagNamespaces: string[] | undefined,
  flagAll: boolean | undefined,
  envNamespaces: Setting | undefined,
  envAll: Setting | undefined,
): Pick<RunOptions, 'namespaces' | 'allNamespaces'> {
  // The two settings are one choice (which namespaces), so any flag for it overrides both variables.
  if (flagNamespaces !== undefined || flagAll !== undefined) {
    const namespaces = (flagNamespaces ?? []).map((value) => dnsLabel({ value, source: '--namespace' }, true));
    if (namespaces.length > 0 && flagAll) throw new UsageError('--namespace and --all-namespaces cannot be used together');
    return { namespaces: unique(namespaces), allNamespaces: flagAll === true };
  }
  const all = envAll ? parseBoolean(envAll) : false;
  const namespaces = (envNamespaces?.value.split(',') ?? [])
    .map((value) => value.trim())
    .filter((value) => value !== '')
    .map((value) => dnsLabel({ value, source: envNamespaces!.source }, true));
  if (namespaces.length > 0 && all) {
    throw new UsageError(`${envName('namespace')} and ${envName('all-namespaces')} cannot be used together`);
  }
  return { namespaces: unique(namespaces), allNamespaces: all };
}

function parseInteger(setting: Setting, min: number, max: number, what: string): number {
  const n = /^[+-]?\d+$/.test(setting.value) ? Number(setting.value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`${setting.source} must be ${what}, got '${setting.value}'`);
  return n;
}

function oneOf<T extends string>(setting: Setting, allowed: readonly T[]): T {
  const value = setting.value.toLowerCase();
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`${setting.source} must be one of ${allowed.join(', ')}; got '${setting.value}'`);
  }
  return value as T;
}

function parseBoolean(setting: Setting): boolean {
  const value = setting.value.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(value)) return true;
  if (['false', '0', 'no', 'off'].includes(value)) return false;
  throw new UsageError(`${setting.source} must be true or false, got '${setting.value}'`);
}

function nonEmpty(setting: Setting | undefined): string | undefined {
  if (setting && setting.value.trim() === '') throw new UsageError(`${setting.source} must not be empty`);
  return setting?.value;
}

/** A namespace name (RFC 1123 label), optionally with `*`/`?`; catches typos before the API server does. */
function dnsLabel(setting: Setting, allowGlob: boolean): string {
  const chars = allowGlob ? 'a-z0-9*?' : 'a-z0-9';
  const valid = new RegExp(`^[${chars}]([-${chars}]*[${chars}])?$`);
  if (setting.value.length > 63 || !valid.test(setting.value)) {
    const allowed = allowGlob ? "lowercase letters, digits and '-', plus '*' and '?' as wildcards" : "lowercase letters, digits and '-'";
    throw new UsageError(`${setting.source} '${setting.value}' is not a namespace name: use ${allowed}`);
  }
  return setting.value;
}

/** A Lease name (RFC 1123 subdomain). */
function dnsSubdomain(setting: Setting): string {
  if (setting.value.length > 253 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(setting.value)) {
    throw new UsageError(`${setting.source} '${setting.value}' is not a valid name: use lowercase letters, digits, '-' and '.'`);
  }
  return setting.value;
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
