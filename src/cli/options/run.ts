// `konductor run` and `konductor dev`: one set of flags (dev runs the same operator, restarted on
// changes), each with its `KONDUCTOR_*` variable, so a Deployment can configure the operator by env.
import type { LogFormat } from '../../framework/observability/logger.js';
// operator-options, not operator: bin/konductor parses the flags before node starts, without the framework.
import { DEFAULT_HANDLER_STALL_MS } from '../../framework/runtime/operator-options.js';
import { DEFAULT_IDENTITY, Identity } from '../../framework/state/identity.js';
import { DEFAULT_STORAGE, STORAGES, type Storage } from '../../framework/state/storage.js';
import { MAX_MAX_HEAP_MIB, MIN_MAX_HEAP_MIB, UNLIMITED_MAX_HEAP_MIB } from '../heap-size.js';
import { envName, type CommandSpec, type FlagReader, type FlagTable } from '../flags.js';
import * as check from '../validators.js';
import { UsageError, type Setting } from '../validators.js';

/** Log levels accepted by `--log-level` (pino's, plus `silent`). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Formats accepted by `--log-format`. */
export const LOG_FORMATS = ['json', 'pretty', 'auto'] as const satisfies readonly LogFormat[];

export const DEFAULT_HEALTH_PORT = 8080;
/** The Lease of the default identity; another identity has its own (see `Identity.leaseName`). */
export const DEFAULT_LEASE_NAME = Identity.DEFAULT.leaseName;
/** Seconds; the operator's default, shown in the help. */
export const DEFAULT_STALL_TIMEOUT = DEFAULT_HANDLER_STALL_MS / 1000;
/** `konductor dev` restarts this long after the last change to a watched file (editors save in bursts). */
export const DEV_DEBOUNCE_MS = 100;

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
  /** Time limit of one handler attempt in seconds; undefined means none. */
  handlerTimeout?: number;
  /**
   * `/healthz` fails when work waits this many seconds with no handler run finishing; 0: off;
   * undefined: the operator's default.
   */
  stallTimeout?: number;
  logLevel: LogLevel;
  logFormat: LogFormat;
  /** `--tracing`: `on`, `off`, or undefined (then the `OTEL_*` variables decide; off by default). */
  tracing?: 'on' | 'off';
  /** Port of the health/metrics server (0: any free port). */
  healthPort: number;
  /**
   * Who the operator is on the objects it handles (annotation prefix, finalizer, default Lease name,
   * Event source, field manager); a DNS-1123 subdomain, `konductor.dev` by default.
   */
  identity: string;
  /** Where the diff-base and handler progress are kept: `annotations` (default) or `status`. */
  storage: Storage;
  /** Run without leader election. */
  standalone: boolean;
  /** Share the objects out among the replicas, all working at once. */
  sharding: boolean;
  /** Keep a standby's watches and cache filled, for an immediate takeover. */
  warmStandby: boolean;
  /** Namespace of the leader-election Lease; default: the operator's own namespace. */
  leaseNamespace?: string;
  /** Name of the leader-election Lease: `--lease-name`, else the identity's. */
  leaseName: string;
  /** HTTPS port of the webhook server (default 9443; 0: any free port). */
  webhookPort?: number;
  /** Base URL the API server calls the webhooks at (local development). */
  webhookUrl?: string;
  /** The Service in front of the operator's pods that the API server calls the webhooks through. */
  webhookService?: { namespace: string; name: string; port?: number };
  /** Serve the admission and conversion webhooks the handlers declare (`--no-webhooks`: do not). */
  webhooks: boolean;
  /**
   * PEM file of the CA that signs the API server's webhook client certificate;
   * set: other admission callers are refused.
   */
  webhookClientCA?: string;
  /**
   * `--max-heap`: V8's old-space ceiling in MiB, which bin/konductor gives node when it starts it;
   * undefined: half the memory limit, or 512 without one.
   */
  maxHeap?: number;
}

/** The flags of `run` and `dev`. */
export const RUN_FLAGS = {
  namespace: {
    short: 'n',
    value: '<name|glob>',
    multiple: true,
    env: 'comma-separated',
    defaultNote: 'all namespaces',
    description:
      "Watch this namespace; repeat for more. '*' and '?' match names (e.g. 'team-*'), also of namespaces created " +
      'later; a glob watches cluster-wide, so it needs cluster-wide list/watch',
    parse: (setting: Setting) => check.namespaceName(setting, true),
  },
  'all-namespaces': {
    short: 'A',
    env: true,
    description: 'Watch all namespaces (cannot be combined with --namespace)',
  },
  context: {
    value: '<name>',
    env: true,
    description: 'kubeconfig context to use instead of the current one',
    parse: check.nonEmpty,
  },
  kubeconfig: {
    value: '<file>',
    env: true,
    defaultNote: '$KUBECONFIG, ~/.kube/config, or the in-cluster service account',
    description: 'kubeconfig file',
    parse: check.nonEmpty,
  },
  concurrency: {
    value: '<n>',
    env: true,
    defaultNote: '64',
    description: 'Handle at most n objects at once; a positive integer',
    parse: (setting: Setting) =>
      check.integer(setting, 1, Number.MAX_SAFE_INTEGER, 'a positive integer'),
  },
  'handler-timeout': {
    value: '<duration>',
    env: true,
    defaultNote: 'no limit',
    description:
      'Abandon a handler attempt (change, @on.event or timer run) after this long: its signal is aborted and it ' +
      'counts as a failure (change handlers and timers retry as after any error). Daemons have no limit. 0 turns it off',
    parse: check.duration,
  },
  'stall-timeout': {
    value: '<duration>',
    env: true,
    defaultNote: String(DEFAULT_STALL_TIMEOUT),
    description:
      '/healthz fails when objects have waited this long for a handler slot while no handler run finished ' +
      '(every slot hung), so the pod is restarted. 0 turns the check off',
    parse: check.duration,
  },
  'log-level': {
    value: '<level>',
    env: true,
    default: 'info',
    description: LOG_LEVELS.join('|'),
    parse: (setting: Setting) => check.oneOf(setting, LOG_LEVELS),
  },
  'log-format': {
    value: '<format>',
    env: true,
    default: 'auto',
    description: 'json|pretty|auto; auto is pretty in a terminal, JSON otherwise',
    parse: (setting: Setting) => check.oneOf(setting, LOG_FORMATS),
  },
  tracing: {
    value: 'on|off',
    env: true,
    description:
      'Export OpenTelemetry traces over OTLP/HTTP (JSON) to OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318). Off unless on, or OTEL_TRACES_EXPORTER=otlp; OTEL_SDK_DISABLED=true turns it off',
    parse: (setting: Setting) => check.oneOf(setting, ['on', 'off'] as const),
  },
  'health-port': {
    value: '<port>',
    env: true,
    default: String(DEFAULT_HEALTH_PORT),
    description:
      'Port of the health and metrics server, 0-65535 (0: any free port). If it is taken, the operator does not start',
    parse: check.port,
  },
  identity: {
    value: '<name>',
    env: true,
    default: DEFAULT_IDENTITY,
    description:
      'Who this operator is on the objects it handles: the prefix of its annotations and its finalizer, its ' +
      'default Lease, the source of its Events and its field manager. Give every operator on a cluster its own, ' +
      'or they share bookkeeping and a Lease. A DNS-1123 subdomain, e.g. db-operator.example.com',
    parse: check.identity,
  },
  storage: {
    value: '<place>',
    env: true,
    default: DEFAULT_STORAGE,
    description:
      "Where each object's diff-base and handler progress are kept: annotations (default), or status " +
      '(status["<identity>"], written in the status write the handlers make anyway: one write per change instead ' +
      'of two; needs a status subresource whose schema keeps unknown fields). Both places are read, so switching ' +
      're-runs no handler',
    parse: (setting: Setting) => check.oneOf(setting, STORAGES),
  },
  standalone: {
    env: true,
    default: 'false',
    description: 'Run without leader election (only one replica may run)',
  },
  sharding: {
    env: true,
    default: 'false',
    description:
      'Share the objects out among the replicas, all of them working at once: each holds a Lease of its own ' +
      'and handles the objects labelled <identity>/shard=<its name>; the leader labels them and moves ~1/N ' +
      'when a replica comes or goes, each drained by its old replica first. Needs leader election',
  },
  'warm-standby': {
    env: true,
    default: 'false',
    description:
      "Keep a standby's watches and cache filled while it waits (as much memory as the leader), so a takeover " +
      'handles changes at once instead of first listing every object. Without sharding',
  },
  'lease-namespace': {
    value: '<ns>',
    env: true,
    defaultNote: "the operator's own",
    description: 'Namespace of the leader-election Lease',
    parse: (setting: Setting) => check.namespaceName(setting, false),
  },
  'lease-name': {
    value: '<name>',
    env: true,
    defaultNote: `the identity's: ${DEFAULT_LEASE_NAME} for ${DEFAULT_IDENTITY}, <identity>-leader for others`,
    description:
      'Name of the leader-election Lease. The leader renews it every 2 s and exits 1 after 20 s without a renewal ' +
      '(an API server stalled for up to ~17 s costs nothing); ' +
      'a standby takes it over 30 s after it last saw it renewed',
    parse: check.subdomainName,
  },
  'webhook-port': {
    value: '<port>',
    env: true,
    defaultNote: '9443',
    description:
      'HTTPS port of the admission and conversion webhook server (@on.validate, @on.mutate, @on.convert), 0-65535',
    parse: check.port,
  },
  'webhook-service': {
    value: '<ns/name[:port]>',
    env: true,
    description:
      'The Service the API server calls the webhooks through (in a cluster; port default 443). Its name is in the ' +
      'generated certificate',
    parse: check.serviceReference,
  },
  'webhook-url': {
    value: '<url>',
    env: true,
    description:
      'Or the https base URL the API server calls them at (local development), e.g. https://127.0.0.1:9443',
    parse: (setting: Setting) => {
      check.nonEmpty(setting);
      return check.httpsUrl(setting);
    },
  },
  'webhook-client-ca': {
    value: '<file>',
    env: true,
    defaultNote: 'any caller',
    description:
      'PEM CA certificates that sign the client certificate the API server presents to admission webhooks (a ' +
      "WebhookAdmissionConfiguration's kubeConfigFile in its --admission-control-config-file). Set: an admission " +
      'request from any other caller is refused (403) before its body is read. Conversion webhooks get no ' +
      'certificate from the API server and stay open',
    parse: check.nonEmpty,
  },
  webhooks: {
    env: true,
    default: 'true',
    description:
      "Do not serve the handlers' webhooks (an operator without the cluster-wide rights to register them); " +
      'they are logged as not served',
  },
  'max-heap': {
    value: '<MiB>',
    env: true,
    defaultNote: `half the memory limit (${MIN_MAX_HEAP_MIB}-${MAX_MAX_HEAP_MIB}), or ${UNLIMITED_MAX_HEAP_MIB} without a limit`,
    description:
      "How far V8's heap may grow (--max-old-space-size), set when bin/konductor starts node, with " +
      'semi-spaces a 32nd of it (2-16 MiB). Without it, node sizes the heap from the whole machine and keeps garbage in proportion. ' +
      'A heap flag in NODE_OPTIONS turns this off',
    parse: (setting: Setting) =>
      check.integer(setting, 16, 65_536, 'a whole number of MiB from 16 to 65536'),
  },
  help: { short: 'h', description: 'Show this help' },
} satisfies FlagTable;

/** `konductor run`. */
export const RUN: CommandSpec<typeof RUN_FLAGS> = {
  name: 'run',
  args: '<file|folder>...',
  summary: 'Run the handler classes of the given files against a Kubernetes cluster.',
  description: `Runs the handler classes (methods with @on.*, @timer or @daemon) exported by the given
TypeScript or JavaScript files against a Kubernetes cluster. Folders are searched recursively
for *.ts, *.mts, *.js and *.mjs files (not *.d.ts, *.test.*, or anything in node_modules).`,
  footer: `Exit codes: 0 stopped cleanly (SIGINT/SIGTERM), 1 failed to start, 2 bad usage,
130 a second signal while stopping.`,
  negatable: true,
  // Its flags may come before the word `run`, so errors point at the overview, which lists them.
  seeHelp: 'konductor --help',
  flags: RUN_FLAGS,
};

/** The flags of `dev`: run's, without leader election by default (one process on a developer's machine). */
export const DEV_FLAGS = {
  ...RUN_FLAGS,
  standalone: {
    env: true,
    default: 'true',
    description: "Run with leader election, as 'konductor run' does",
  },
} satisfies FlagTable;

/** `konductor dev`. */
export const DEV: CommandSpec<typeof DEV_FLAGS> = {
  ...RUN,
  name: 'dev',
  summary: 'Like run, and restart with the new code on every change to the files.',
  description: `Runs the handlers like 'konductor run', watches the given files (a file: the module files of its
folder; a folder: every module file below it, not node_modules or hidden folders) and, ${DEV_DEBOUNCE_MS} ms
after the last change, stops the operator cleanly and starts it again with the new code, logging
how long the reload took. A file that fails to load is reported, and the next change retries.
Without leader election by default (--no-standalone turns it back on).`,
  footer: 'Stop with Ctrl-C (SIGINT) or SIGTERM.',
  flags: DEV_FLAGS,
};

/**
 * The options of `run` or `dev` from the parsed flags and the environment.
 * @throws {@link UsageError} naming the flag or variable whose value is refused.
 */
export function runOptions(reader: FlagReader<typeof RUN_FLAGS>, files: string[]): RunOptions {
  const scope = namespaceScope(reader);
  const identity = reader.get('identity');
  if (reader.get('sharding') && reader.get('standalone'))
    throw new UsageError(
      '--sharding needs leader election (the replicas find each other through Leases): drop --standalone, or give --no-standalone to dev',
    );
  return {
    files,
    ...scope,
    context: reader.get('context'),
    kubeconfig: reader.get('kubeconfig'),
    concurrency: reader.get('concurrency'),
    // 0 and unset both mean no limit: the operator takes undefined.
    handlerTimeout: reader.get('handler-timeout') || undefined,
    stallTimeout: reader.get('stall-timeout'),
    logLevel: reader.get('log-level'),
    logFormat: reader.get('log-format'),
    tracing: reader.get('tracing'),
    healthPort: reader.get('health-port'),
    identity: identity.name,
    storage: reader.get('storage'),
    standalone: reader.get('standalone'),
    sharding: reader.get('sharding'),
    warmStandby: reader.get('warm-standby'),
    leaseNamespace: reader.get('lease-namespace'),
    leaseName: reader.get('lease-name') ?? identity.leaseName,
    webhookPort: reader.get('webhook-port'),
    webhookUrl: reader.get('webhook-url'),
    webhookService: reader.get('webhook-service'),
    webhooks: reader.get('webhooks'),
    webhookClientCA: reader.get('webhook-client-ca'),
    maxHeap: reader.get('max-heap'),
  };
}

/** The flags `namespaceScope` reads, which `disconnect` and `uninstall` share with `run`. */
type ScopeFlags = Pick<typeof RUN_FLAGS, 'namespace' | 'all-namespaces'>;

/**
 * The namespaces to serve. `--namespace` and `--all-namespaces` are one choice, so either flag
 * overrides both variables; each pair (flags, variables) is refused when it asks for both.
 */
export function namespaceScope(
  reader: FlagReader<ScopeFlags>,
): Pick<RunOptions, 'namespaces' | 'allNamespaces'> {
  if (reader.given('namespace') || reader.given('all-namespaces')) {
    const namespaces = reader.flag('namespace') ?? [];
    const all = reader.flag('all-namespaces') === true;
    if (namespaces.length > 0 && all)
      throw new UsageError('--namespace and --all-namespaces cannot be used together');
    return { namespaces: check.unique(namespaces), allNamespaces: all };
  }
  const all = reader.variable('all-namespaces') ?? false;
  const namespaces = reader.variable('namespace') ?? [];
  if (namespaces.length > 0 && all) {
    throw new UsageError(
      `${envName('namespace')} and ${envName('all-namespaces')} cannot be used together`,
    );
  }
  return { namespaces: check.unique(namespaces), allNamespaces: all };
}
