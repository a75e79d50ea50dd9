import { parseArgs } from 'node:util';
import type { LogFormat } from '../framework/observability/logger.js';
import { DEFAULT_HANDLER_STALL_MS } from '../framework/runtime/operator.js';
import { DEFAULT_IDENTITY, Identity, InvalidIdentityError } from '../framework/state/identity.js';
import { DEFAULT_STORAGE, STORAGES, type Storage } from '../framework/state/storage.js';

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
  /**
   * Who the operator is on the objects it handles (annotation prefix, finalizer, default Lease name,
   * Event source, field manager); a DNS-1123 subdomain, `konductor.dev` by default.
   */
  identity: string;
  /** Where the diff-base and handler progress are kept: `annotations` (default) or `status`. */
  storage: Storage;
  /** Run without leader election. */
  standalone: boolean;
  /** Namespace of the leader-election Lease; default: the operator's own namespace. */
  leaseNamespace?: string;
  /** Name of the leader-election Lease: `--lease-name`, else the identity's (`konductor-leader` for the default identity). */
  leaseName: string;
  // admission webhooks
  /** HTTPS port of the webhook server (default 9443; 0: any free port). */
  webhookPort?: number;
  /** Base URL the API server calls the webhooks at (local development). */
  webhookUrl?: string;
  /** The Service in front of the operator's pods that the API server calls the webhooks through. */
  webhookService?: { namespace: string; name: string; port?: number };
  /** Serve the admission and conversion webhooks the handlers declare (`--no-webhooks`: do not). */
  webhooks: boolean;
  /** PEM file of the CA that signs the API server's webhook client certificate; set: admission callers without it are refused. */
  webhookClientCA?: string;
}

/** The commands of `konductor`. */
export const COMMANDS = ['run', 'dev', 'init', 'types', 'manifests', 'disconnect', 'uninstall'] as const;
export type CommandName = (typeof COMMANDS)[number];

/** What `konductor init <dir>` was asked to create. */
export interface InitOptions {
  /** Folder of the new project, as given; it must be missing or empty. */
  dir: string;
  /** npm package name of the project; default: derived from the folder's name. */
  name?: string;
  /** API group of the example CRD (default `example.com`). */
  group: string;
  /** Version range of konductor in the new package.json; default `^<this version>`. */
  konductor?: string;
}

/**
 * What `konductor disconnect` and `konductor uninstall` act on: the objects of the resources the
 * handler files declare, in the namespaces an operator run with the same options serves, and that
 * operator's identity and Lease.
 */
export interface ReleaseScope {
  /** Handler files or folders, as given; only the resources they declare are used. */
  files: string[];
  /** Namespace names or globs; empty means all namespaces. Cluster-scoped resources are always in scope, as for run. */
  namespaces: string[];
  context?: string;
  kubeconfig?: string;
  /** The operator's identity (its finalizer, annotation prefix, status field and default Lease). */
  identity: string;
  /** Namespace of the operator's Lease (its own); undefined: the pod's own namespace, required outside a pod. */
  leaseNamespace?: string;
  /** Name of the operator's Lease: `--lease-name`, else the identity's. */
  leaseName: string;
  /** Print what would be done, one line per object, and write nothing. */
  dryRun: boolean;
}

/** What `konductor disconnect` was asked to do. */
export interface DisconnectOptions extends ReleaseScope {
  /** Go ahead although a live leader holds the operator's Lease. */
  force: boolean;
}

/** What `konductor uninstall` was asked to do. */
export interface UninstallOptions extends ReleaseScope {
  /** How long to wait for the objects to be gone, in seconds (0: do not wait). */
  timeoutSeconds: number;
  /** CustomResourceDefinitions to delete once none of their objects is left (`<plural>.<group>`). */
  crds: string[];
}

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

/** Bad command-line input or environment; the CLI prints its one-line message and exits with code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const DEFAULT_HEALTH_PORT = 8080;
/** The Lease of the default identity; another identity has its own (see `Identity.leaseName`). */
export const DEFAULT_LEASE_NAME = Identity.DEFAULT.leaseName;
export { DEFAULT_IDENTITY };
/** API group of the example resource of `konductor init`. */
export const DEFAULT_INIT_GROUP = 'example.com';
/** `konductor dev` restarts this long after the last change to a watched file (editors save in bursts). */
export const DEV_DEBOUNCE_MS = 100;
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
  identity: { type: 'string' },
  storage: { type: 'string' },
  standalone: { type: 'boolean' },
  'lease-namespace': { type: 'string' },
  'lease-name': { type: 'string' },
  'webhook-port': { type: 'string' },
  'webhook-url': { type: 'string' },
  'webhook-service': { type: 'string' },
  'webhook-client-ca': { type: 'string' },
  webhooks: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** The options of `run` and `dev`, each with its environment variable. */
const RUN_OPTIONS_HELP = `Options (each may also come from the environment variable shown; flags win over the environment):
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
      --health-port <port>     Port of the health and metrics server, 0-65535 (default ${DEFAULT_HEALTH_PORT};
                               0: any free port). If it is taken, the operator does not start.
                               env ${envName('health-port')}
      --identity <name>        Who this operator is on the objects it handles: the prefix of its
                               annotations and its finalizer, its default Lease, the source of its
                               Events and its field manager. Give every operator on a cluster its
                               own, or they share bookkeeping and a Lease. A DNS-1123 subdomain, e.g.
                               db-operator.example.com (default ${DEFAULT_IDENTITY}).
                               env ${envName('identity')}
      --storage <place>        Where each object's diff-base and handler progress are kept:
                               annotations (default), or status (status["<identity>"], written in
                               the status write the handlers make anyway: one write per change
                               instead of two; needs a status subresource whose schema keeps unknown
                               fields). Both places are read, so switching re-runs no handler.
                               env ${envName('storage')}
      --standalone             Run without leader election (only one replica may run).
                               env ${envName('standalone')}=true; --no-standalone overrides it
      --lease-namespace <ns>   Namespace of the leader-election Lease (default: the operator's own).
                               env ${envName('lease-namespace')}
      --lease-name <name>      Name of the leader-election Lease (default: the identity's,
                               ${DEFAULT_LEASE_NAME} for ${DEFAULT_IDENTITY}, <identity>-leader for others).
                               The leader renews it every 2 s and exits 1 after 20 s without a
                               renewal (an API server stalled for up to ~17 s costs nothing); a
                               standby takes it over 30 s after it last saw it renewed.
                               env ${envName('lease-name')}
      --webhook-port <port>    HTTPS port of the admission and conversion webhook server
                               (@on.validate, @on.mutate, @on.convert), 0-65535 (default 9443).
                               env ${envName('webhook-port')}
      --webhook-service <ns/name[:port]>
                               The Service the API server calls the webhooks through (in a cluster;
                               port default 443). Its name is in the generated certificate.
                               env ${envName('webhook-service')}
      --webhook-url <url>      Or the https base URL the API server calls them at (local
                               development), e.g. https://127.0.0.1:9443.
                               env ${envName('webhook-url')}
      --webhook-client-ca <file>
                               PEM CA certificates that sign the client certificate the API server
                               presents to admission webhooks (a WebhookAdmissionConfiguration's
                               kubeConfigFile in its --admission-control-config-file). Set: an
                               admission request from any other caller is refused (403) before its
                               body is read. Conversion webhooks get no certificate from the API
                               server and stay open. Default: any caller.
                               env ${envName('webhook-client-ca')}
      --no-webhooks            Do not serve the handlers' webhooks (an operator without the
                               cluster-wide rights to register them); they are logged as not served.
                               env ${envName('webhooks')}=false
`;

/** Help text for `konductor --help`: every command, then the options of `run` and `dev`. */
export const HELP = `Usage: konductor <command> [arguments] [options]

Commands:
  run <file|folder>...        Run the handler classes of the given files against a Kubernetes cluster.
  dev <file|folder>...        Like run, and restart with the new code on every change to the files.
  init <dir>                  Create a new operator project (handlers, CRD, test, Dockerfile, deploy/).
  types <crd.yaml>...         Print TypeScript types for the custom resources of CRD files.
  manifests <file|folder>...  Print the ServiceAccount, RBAC and Deployment the handlers need.
  disconnect <file|folder>... Release every object from the operator (finalizer and bookkeeping),
                              leaving the applications running and unmanaged.
  uninstall <file|folder>...  Delete every object of the handlers' custom resources, wait until
                              they are gone, then delete the CRDs named with --crd.

Run 'konductor <command> --help' for the details of one command.
  -h, --help                   Show this help (konductor <command> --help: that command's).
      --version                Show the version.

Start a project:  konductor init my-operator && cd my-operator && npm install && npm test

konductor run and konductor dev:
${RUN_OPTIONS_HELP}`;

/** Help text for `konductor run --help`. */
export const RUN_HELP = `Usage: konductor run <file|folder>... [options]

Runs the handler classes (methods with @on.*, @timer or @daemon) exported by the given
TypeScript or JavaScript files against a Kubernetes cluster. Folders are searched recursively
for *.ts, *.mts, *.js and *.mjs files (not *.d.ts, *.test.*, or anything in node_modules).

${RUN_OPTIONS_HELP}  -h, --help                   Show this help.

Exit codes: 0 stopped cleanly (SIGINT/SIGTERM), 1 failed to start, 2 bad usage,
130 a second signal while stopping.
`;

/** Help text for `konductor dev --help`. */
export const DEV_HELP = `Usage: konductor dev <file|folder>... [options]

Runs the handlers like 'konductor run', watches the given files (a file: the module files of its
folder; a folder: every module file below it, not node_modules or hidden folders) and, ${DEV_DEBOUNCE_MS} ms
after the last change, stops the operator cleanly and starts it again with the new code, logging
how long the reload took. A file that fails to load is reported, and the next change retries.
Without leader election by default (--no-standalone turns it back on).

${RUN_OPTIONS_HELP}  -h, --help                   Show this help.

Stop with Ctrl-C (SIGINT) or SIGTERM.
`;

/** Help text for `konductor init --help`. */
export const INIT_HELP = `Usage: konductor init <dir> [options]

Creates a new operator project in <dir> (which must be missing or empty): package.json,
tsconfig.json, src/handlers.ts (create, update and delete handlers and a timer on an example
custom resource), its CRD in crds/, an integration test on a real control plane in test/,
a Dockerfile and deploy/ (ServiceAccount, RBAC and a hardened Deployment).

Options:
      --name <name>            npm package name (default: from the folder's name).
      --group <group>          API group of the example resource (default ${DEFAULT_INIT_GROUP}).
      --konductor <version>    konductor version range in package.json (default: ^ this version).
  -h, --help                   Show this help.

Then:  cd <dir> && npm install && npm test
`;

/** Default of `konductor uninstall --timeout`, in seconds. */
export const DEFAULT_UNINSTALL_TIMEOUT = 300;

/** The options `disconnect` and `uninstall` share with `run`. */
const RELEASE_SCOPE_HELP = `  -n, --namespace <name|glob>  Only objects in this namespace; repeat for more ('*' and '?' match
                               names). Default: all namespaces. Cluster-scoped resources are always
                               included, as 'konductor run' serves them whatever its namespaces.
                               env ${envName('namespace')} (comma-separated)
  -A, --all-namespaces         All namespaces (the default; cannot be combined with --namespace).
      --context <name>         kubeconfig context to use instead of the current one.
                               env ${envName('context')}
      --kubeconfig <file>      kubeconfig file. Default: $KUBECONFIG, ~/.kube/config, or in-cluster.
                               env ${envName('kubeconfig')}
      --identity <name>        The operator's identity, as given to 'konductor run' (default
                               ${DEFAULT_IDENTITY}): its finalizer <identity>/finalizer, its annotations
                               <identity>/..., its status["<identity>"] and its default Lease.
                               env ${envName('identity')}
      --lease-namespace <ns>   The operator's own namespace, where its Lease is (konductor-system
                               for deploy/). Required, except in a pod: there its own namespace.
                               env ${envName('lease-namespace')}
      --lease-name <name>      Name of the operator's Lease (default: the identity's, ${DEFAULT_LEASE_NAME}
                               for ${DEFAULT_IDENTITY}).
                               env ${envName('lease-name')}
      --dry-run                Print what would be done, one line per object; write nothing.
  -h, --help                   Show this help.
`;

/** Help text for `konductor disconnect --help`. */
export const DISCONNECT_HELP = `Usage: konductor disconnect <file|folder>... [options]

Releases every object of the resources the handler files declare from the operator, so that the
operator can be removed and what it manages keeps running, unmanaged: from each object it removes
the operator's finalizer (<identity>/finalizer), every annotation under <identity>/ (the
diff-base, handler progress, timer schedules, the konductor-managed marker) and status["<identity>"]
(both storages). Nothing else is written: not the objects' other fields, not their children
(Deployments, Secrets, Pods the handlers created), not another identity's bookkeeping. An object
already being deleted is deleted as soon as its last finalizer goes, and its delete handlers do
not run. Objects that carry nothing of the operator get no write, so a second run writes nothing.
First it deletes the operator's own webhook configurations (named <identity>): with no operator
behind them, failurePolicy Fail webhooks would refuse the releases and every later write.

Loads the handler files as 'konductor run' does (only to know the resources); needs no operator.
Refuses while a live leader holds the operator's Lease (it would handle every released object as
new): stop the operator first (scale its Deployment to 0), or pass --force. A Lease is live while
its holder is set and its renewTime plus leaseDurationSeconds is in the future.

${RELEASE_SCOPE_HELP}      --force                  Release even while a leader holds the Lease.

Prints one line per released object (and per failure), then:
  disconnect: <n> objects seen, <n> released, <n> already clean, <n> failed
Exit codes: 0 every object is released (or was clean), 1 some failed or the Lease is held,
2 bad usage.
`;

/** Help text for `konductor uninstall --help`. */
export const UNINSTALL_HELP = `Usage: konductor uninstall <file|folder>... [options]

Removes what an operator manages: deletes every object of the custom resources the handler files
declare (in the namespaces given, all by default) while the operator still runs, so its delete
handlers remove what they created and the garbage collector removes the objects' owned children;
waits until the objects are gone, showing how many are left (on a terminal one updating line,
otherwise at most one line per second); then deletes the CustomResourceDefinitions named with
--crd. A CRD is never deleted while any object of it is left (in any namespace). Built-in
resources the handlers watch (namespaces, pods, ...) are never deleted. The operator's webhook
configurations (cluster-wide) are deleted last, only without --namespace and with no object left.

Objects are deleted with their uid as a precondition (a re-created object is not deleted by
mistake) and propagationPolicy Background. When time runs out, each object left is printed
with why it stays, e.g. "finalizer ${DEFAULT_IDENTITY}/finalizer held, no operator running: run
konductor disconnect or start the operator".

${RELEASE_SCOPE_HELP}      --timeout <duration>     How long to wait for the objects to be gone: seconds, or with a unit
                               (90s, 5m, 1h); 0 does not wait. Default ${DEFAULT_UNINSTALL_TIMEOUT / 60}m.
      --crd <name>             A CustomResourceDefinition to delete once its objects are gone, as
                               <plural>.<group> (e.g. etcdclusters.etcd.database.coreos.com);
                               repeat for more.

Exit codes: 0 every object and every named CRD is gone, 1 something is left (listed with the
reason), 2 bad usage.
`;

/** The help of one command, or the overview; `types` and `manifests` print their own. */
export function helpFor(command: CommandName | undefined): string {
  if (command === 'run') return RUN_HELP;
  if (command === 'dev') return DEV_HELP;
  if (command === 'init') return INIT_HELP;
  if (command === 'disconnect') return DISCONNECT_HELP;
  if (command === 'uninstall') return UNINSTALL_HELP;
  return HELP;
}

/**
 * Parses `konductor` arguments (without `node` and the script) plus `KONDUCTOR_*` variables.
 * @throws {@link UsageError} with a one-line message naming the flag (or variable) and what it allows.
 */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Command {
  const found = findCommand(argv);
  const rest = found ? [...argv.slice(0, found.index), ...argv.slice(found.index + 1)] : [...argv];
  if (found?.name === 'init') return parseInit(rest);
  if (found?.name === 'types' || found?.name === 'manifests') return { kind: found.name, args: rest };
  if (found?.name === 'help') return parseHelpCommand(rest);
  if (found?.name === 'disconnect' || found?.name === 'uninstall') return parseRelease(found.name, rest, env);

  const { values, positionals } = parseFlags(argv);
  const [command, ...files] = positionals;
  const runLike = command === 'run' || command === 'dev' ? command : undefined;
  if (values.help) return { kind: 'help', command: runLike };
  if (values.version) return { kind: 'version' };
  if (command === undefined) {
    throw new UsageError("no command given: use 'konductor init <dir>' for a new project or 'konductor run <file|folder>...' (see konductor --help)");
  }
  if (runLike === undefined) throw new UsageError(`unknown command '${command}': use ${COMMANDS.join(', ')} (see konductor --help)`);
  if (files.length === 0) throw new UsageError(`${runLike} needs at least one handler file or folder: konductor ${runLike} <file|folder>...`);
  // dev runs one process on a developer's machine: no Lease to wait for, unless asked.
  const options = runOptions(values, files, env, { standalone: runLike === 'dev' });
  return runLike === 'run' ? { kind: 'run', options } : { kind: 'dev', options, runArgs: rest };
}

function runOptions(values: ParsedFlags['values'], files: string[], env: NodeJS.ProcessEnv, defaults: { standalone: boolean }): RunOptions {
  const fromEnv = (option: keyof typeof OPTIONS): Setting | undefined => {
    const name = envName(option);
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : { value: value.trim(), source: name };
  };
  const flag = (option: keyof typeof OPTIONS, value: string | undefined): Setting | undefined =>
    value === undefined ? undefined : { value, source: `--${option}` };
  const pick = (option: keyof typeof OPTIONS, value: string | undefined): Setting | undefined => flag(option, value) ?? fromEnv(option);
  const pickBoolean = (option: keyof typeof OPTIONS, value: boolean | undefined, fallback: boolean): boolean => {
    if (value !== undefined) return value;
    const setting = fromEnv(option);
    return setting ? parseBoolean(setting) : fallback;
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
  const identity = operatorIdentity(pick('identity', values.identity));
  const storage = pick('storage', values.storage);
  const webhookPort = pick('webhook-port', values['webhook-port']);
  const webhookUrl = nonEmpty(pick('webhook-url', values['webhook-url']));
  const webhookService = pick('webhook-service', values['webhook-service']);
  const webhookClientCA = nonEmpty(pick('webhook-client-ca', values['webhook-client-ca']));
  return {
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
    identity: identity.name,
    storage: storage ? oneOf(storage, STORAGES) : DEFAULT_STORAGE,
    standalone: pickBoolean('standalone', values.standalone, defaults.standalone),
    leaseNamespace: leaseNamespace && dnsLabel(leaseNamespace, false),
    leaseName: leaseName ? dnsSubdomain(leaseName) : identity.leaseName,
    webhookPort: webhookPort && parseInteger(webhookPort, 0, 65_535, 'an integer from 0 to 65535'),
    webhookUrl: webhookUrl && httpsUrl(webhookUrl),
    webhookService: webhookService && serviceReference(webhookService),
    webhooks: pickBoolean('webhooks', values.webhooks, true),
    webhookClientCA,
  };
}

/** `--webhook-url`: an https URL (the API server calls webhooks over TLS only). */
function httpsUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--webhook-url ${JSON.stringify(value)} is not a URL: give the https base URL the API server reaches the operator at, e.g. https://127.0.0.1:9443`);
  }
  if (url.protocol !== 'https:') throw new UsageError(`--webhook-url ${value} must start with https://: the API server calls webhooks over TLS only`);
  return value;
}

/** `--webhook-service namespace/name[:port]`. */
function serviceReference(setting: Setting): { namespace: string; name: string; port?: number } {
  const match = /^([^/:]+)\/([^/:]+)(?::(\d+))?$/.exec(setting.value);
  if (!match) throw new UsageError(`${setting.source} ${JSON.stringify(setting.value)} must be <namespace>/<name> or <namespace>/<name>:<port>`);
  const [, namespace, name, port] = match;
  return {
    namespace: dnsLabel({ value: namespace!, source: setting.source }, false),
    name: dnsLabel({ value: name!, source: setting.source }, false),
    ...(port ? { port: parseInteger({ value: port, source: setting.source }, 1, 65_535, 'a port from 1 to 65535') } : {}),
  };
}

/**
 * The command word and where it stands: the first argument that is neither an option nor the value
 * of one (`run`'s options may come before it, as they always could: `konductor -n ns run x.ts`).
 */
function findCommand(argv: readonly string[]): { name: string; index: number } | undefined {
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!;
    if (arg === '--') return index + 1 < argv.length ? { name: argv[index + 1]!, index: index + 1 } : undefined;
    if (!arg.startsWith('-') || arg === '-') return { name: arg, index };
    if (takesValue(arg)) index++;
  }
  return undefined;
}

/** Whether a run option is written with its value in the next argument (`--context x`, `-n x`). */
function takesValue(arg: string): boolean {
  if (arg.startsWith('--')) {
    const name = arg.slice(2);
    return !name.includes('=') && name in OPTIONS && OPTIONS[name as keyof typeof OPTIONS].type === 'string';
  }
  // `-n` alone; `-nteam` carries its value.
  return arg.length === 2 && Object.values(OPTIONS).some((option) => 'short' in option && option.short === arg[1] && option.type === 'string');
}

/** `konductor help [command]`. */
function parseHelpCommand(args: readonly string[]): Command {
  const topic = args.find((arg) => !arg.startsWith('-'));
  if (topic === undefined) return { kind: 'help' };
  if (!(COMMANDS as readonly string[]).includes(topic)) throw new UsageError(`unknown command '${topic}': use ${COMMANDS.join(', ')} (see konductor --help)`);
  return { kind: 'help', command: topic as CommandName };
}

const INIT_OPTIONS = {
  name: { type: 'string' },
  group: { type: 'string' },
  konductor: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parseInit(args: readonly string[]): Command {
  let parsed: ReturnType<typeof parseInitStrict>;
  try {
    parsed = parseInitStrict(args);
  } catch (error) {
    throw new UsageError(describeParseError(error).replace('(see konductor --help)', '(see konductor init --help)'));
  }
  const { values, positionals } = parsed;
  if (values.help) return { kind: 'help', command: 'init' };
  if (positionals.length === 0) throw new UsageError('init needs the folder of the new project: konductor init <dir>');
  if (positionals.length > 1) throw new UsageError(`init takes one folder, got ${positionals.length}: ${positionals.join(' ')}`);
  const dir = positionals[0]!;
  if (dir.trim() === '') throw new UsageError('init needs the folder of the new project: konductor init <dir>');
  const group = values.group ?? DEFAULT_INIT_GROUP;
  if (group.length > 253 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(group)) {
    throw new UsageError(`--group '${group}' is not an API group: use a domain with at least one dot, in lowercase (e.g. example.com)`);
  }
  if (values.name !== undefined && !isPackageName(values.name)) {
    throw new UsageError(`--name '${values.name}' is not an npm package name: use lowercase letters, digits, '-', '.' and '_' (optionally @scope/name)`);
  }
  if (values.konductor !== undefined && (values.konductor.trim() === '' || /\s/.test(values.konductor))) {
    throw new UsageError(`--konductor '${values.konductor}' is not a version range: use e.g. ^0.1.0, a tarball path or a URL, without spaces`);
  }
  return { kind: 'init', options: { dir, name: values.name, group, konductor: values.konductor } };
}

function parseInitStrict(args: readonly string[]) {
  return parseArgs({ args: [...args], options: INIT_OPTIONS, allowPositionals: true, strict: true });
}

const RELEASE_OPTIONS = {
  namespace: OPTIONS.namespace,
  'all-namespaces': OPTIONS['all-namespaces'],
  context: OPTIONS.context,
  kubeconfig: OPTIONS.kubeconfig,
  identity: OPTIONS.identity,
  'lease-namespace': OPTIONS['lease-namespace'],
  'lease-name': OPTIONS['lease-name'],
  'dry-run': { type: 'boolean' },
  force: { type: 'boolean' },
  timeout: { type: 'string' },
  crd: { type: 'string', multiple: true },
  help: OPTIONS.help,
} as const;

/** Options only one of the two commands takes. */
const ONLY_FOR: Record<string, 'disconnect' | 'uninstall'> = { force: 'disconnect', timeout: 'uninstall', crd: 'uninstall' };

/**
 * `konductor disconnect|uninstall <file|folder>... [options]`: the handler files, and the options they
 * share with `run` (same flags, same variables, same checks).
 */
function parseRelease(command: 'disconnect' | 'uninstall', args: readonly string[], env: NodeJS.ProcessEnv): Command {
  let parsed: ReturnType<typeof parseReleaseStrict>;
  try {
    parsed = parseReleaseStrict(args);
  } catch (error) {
    throw new UsageError(describeParseError(error).replace('(see konductor --help)', `(see konductor ${command} --help)`));
  }
  const { values, positionals: files } = parsed;
  if (values.help) return { kind: 'help', command };
  for (const [option, owner] of Object.entries(ONLY_FOR)) {
    if (owner !== command && values[option as keyof typeof values] !== undefined) {
      throw new UsageError(`--${option} is an option of konductor ${owner}, not of ${command} (see konductor ${command} --help)`);
    }
  }
  if (files.length === 0) throw new UsageError(`${command} needs the operator's handler files or folders: konductor ${command} <file|folder>...`);
  const fromEnv = (option: keyof typeof RELEASE_OPTIONS): Setting | undefined => {
    const name = envName(option);
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : { value: value.trim(), source: name };
  };
  const pick = (option: keyof typeof RELEASE_OPTIONS, value: string | undefined): Setting | undefined =>
    value === undefined ? fromEnv(option) : { value, source: `--${option}` };
  const identity = operatorIdentity(pick('identity', values.identity));
  const leaseNamespace = pick('lease-namespace', values['lease-namespace']);
  const leaseName = pick('lease-name', values['lease-name']);
  const scope: ReleaseScope = {
    files,
    namespaces: namespaceScope(values.namespace, values['all-namespaces'], fromEnv('namespace'), fromEnv('all-namespaces')).namespaces,
    context: nonEmpty(pick('context', values.context)),
    kubeconfig: nonEmpty(pick('kubeconfig', values.kubeconfig)),
    identity: identity.name,
    leaseNamespace: leaseNamespace && dnsLabel(leaseNamespace, false),
    leaseName: leaseName ? dnsSubdomain(leaseName) : identity.leaseName,
    dryRun: values['dry-run'] === true,
  };
  if (command === 'disconnect') return { kind: 'disconnect', options: { ...scope, force: values.force === true } };
  const timeout = values.timeout === undefined ? DEFAULT_UNINSTALL_TIMEOUT : parseSeconds({ value: values.timeout, source: '--timeout' });
  const crds = unique((values.crd ?? []).map((name) => crdName({ value: name, source: '--crd' })));
  return { kind: 'uninstall', options: { ...scope, timeoutSeconds: timeout, crds } };
}

function parseReleaseStrict(args: readonly string[]) {
  return parseArgs({ args: [...args], options: RELEASE_OPTIONS, allowPositionals: true, strict: true });
}

const SECONDS_PER_UNIT: Record<string, number> = { '': 1, s: 1, m: 60, h: 3600 };

/** A wait: whole seconds, or with a unit (`90s`, `5m`, `1h`). */
function parseSeconds(setting: Setting): number {
  const match = /^(\d+)(s|m|h)?$/.exec(setting.value.trim());
  const seconds = match ? Number(match[1]) * SECONDS_PER_UNIT[match[2] ?? '']! : NaN;
  if (!Number.isSafeInteger(seconds) || seconds > MAX_SECONDS) {
    throw new UsageError(`${setting.source} must be a duration in seconds, or with a unit s, m or h (e.g. 300, 90s, 5m), got '${setting.value}'`);
  }
  return seconds;
}

/** A CustomResourceDefinition's name: `<plural>.<group>`, a DNS-1123 subdomain with at least one dot. */
function crdName(setting: Setting): string {
  const name = dnsSubdomain(setting);
  if (!name.includes('.')) throw new UsageError(`${setting.source} '${name}' is not a CustomResourceDefinition name: use <plural>.<group>, e.g. widgets.example.com`);
  return name;
}

/** npm's rules for new package names: lowercase, URL-safe, at most 214 characters, optionally scoped. */
export function isPackageName(name: string): boolean {
  return name.length <= 214 && /^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/.test(name);
}

export { isNamespaceGlob, matchNamespace } from '../framework/runtime/namespace-patterns.js';

/** A raw value and where it came from (`--flag` or `KONDUCTOR_VAR`), for error messages. */
interface Setting {
  value: string;
  source: string;
}

type ParsedFlags = ReturnType<typeof parseArgsStrict>;

function parseFlags(argv: readonly string[]): ParsedFlags {
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

/** The operator's identity (the default when not set), checked as the framework checks it. */
function operatorIdentity(setting: Setting | undefined): Identity {
  if (setting === undefined) return Identity.DEFAULT;
  try {
    return Identity.parse(setting.value);
  } catch (error) {
    if (!(error instanceof InvalidIdentityError)) throw error;
    throw new UsageError(`${setting.source}: ${error.message}`);
  }
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
