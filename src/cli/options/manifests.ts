// `konductor manifests <file|folder>...`: the deploy YAML for the handlers. Its flags describe the
// deployment, not a running operator, so none has a variable.
import { DEFAULT_IDENTITY } from '../../framework/state/identity.js';
import { DEFAULT_STORAGE, STORAGES, type Storage } from '../../framework/state/storage.js';
import { parseRule, RuleSyntaxError, VERBS, type PolicyRule } from '../commands/rbac-rules.js';
import { FlagReader, parseFlags, type CommandSpec, type FlagTable } from '../flags.js';
import * as check from '../validators.js';
import { UsageError, type Setting } from '../validators.js';

/** Name of the ServiceAccount, Deployment and Roles unless `--name` says otherwise. */
export const DEFAULT_MANIFESTS_NAME = 'konductor-operator';

/** What `konductor manifests` was asked to print. */
export interface ManifestsOptions {
  /** Handler files or folders, as given. */
  files: string[];
  name: string;
  namespace: string;
  createNamespace: boolean;
  image: string;
  runPaths: string[];
  /** With `--namespace-scoped`: the namespaces to serve; else undefined (cluster-wide). */
  watchNamespaces?: string[];
  /** CRD files or folders to read, as given. */
  crdPaths: string[];
  extraRules: PolicyRule[];
  leaseName: string;
  /** Passed to `konductor run` only when given. */
  identity?: string;
  /** Passed to `konductor run` only when given. */
  storage?: Storage;
  /** With `--monitoring`: what to add for Prometheus and Grafana; else undefined. */
  monitoring?: MonitoringOptions;
  /** `--sharding`: replicas share the objects out. */
  sharding: boolean;
}

/** What `--monitoring` and the flags that go with it ask for. */
export interface MonitoringOptions {
  /** `--monitoring-label` key → value, in order given. */
  labels: Record<string, string>;
  dashboardNamespace: string;
  /** `--runbook-url`, when given. */
  runbookUrl?: string;
}

// A label key: an optional DNS subdomain prefix and '/', then a name of at most 63 characters.
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A Kubernetes label as `key=value`. */
function label(setting: Setting): [string, string] {
  const equals = setting.value.indexOf('=');
  const key = equals < 0 ? '' : setting.value.slice(0, equals);
  const value = equals < 0 ? '' : setting.value.slice(equals + 1);
  const slash = key.lastIndexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const keyName = key.slice(slash + 1);
  const valid =
    equals > 0 &&
    LABEL_NAME.test(keyName) &&
    (prefix === undefined || (prefix.length <= 253 && LABEL_PREFIX.test(prefix))) &&
    (value === '' || LABEL_NAME.test(value));
  if (!valid) {
    throw new UsageError(
      `${setting.source} '${setting.value}' is not a label: write <key>=<value>, e.g. release=kube-prometheus-stack ` +
        "(letters, digits, '-', '_' and '.', at most 63 of each; a key may start with <domain>/)",
    );
  }
  return [key, value];
}

/** An http(s) URL without a #fragment: each alert's anchor is appended. */
function pageUrl(setting: Setting): string {
  let url: URL | undefined;
  try {
    url = new URL(setting.value);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || setting.value.includes('#')) {
    throw new UsageError(
      `${setting.source} '${setting.value}' is not the URL of a page: give an http(s) URL without #, ` +
        'e.g. https://wiki.example.com/konductor-alerts',
    );
  }
  return setting.value;
}

/** The flags of `manifests`. */
export const MANIFESTS_FLAGS = {
  name: {
    value: '<name>',
    default: DEFAULT_MANIFESTS_NAME,
    description:
      'Name of the ServiceAccount, Deployment, Roles and ClusterRole ' +
      '(ClusterRoles are cluster-wide: pick a unique name)',
    parse: check.labelName,
  },
  namespace: {
    value: '<ns>',
    defaultNote: 'the --name',
    description: "The operator's namespace (ServiceAccount, Deployment, Lease)",
    parse: check.labelName,
  },
  'create-namespace': { description: 'Also print the Namespace' },
  image: {
    value: '<ref>',
    defaultNote: '<name>:latest',
    description: 'Container image with the handlers and konductor',
    parse: (setting: Setting) => {
      if (setting.value.trim() === '' || /\s/.test(setting.value)) {
        throw new UsageError(`${setting.source} '${setting.value}' is not an image reference`);
      }
      return setting.value;
    },
  },
  'run-path': {
    value: '<path>',
    multiple: true,
    defaultNote: "the files as given, relative to the image's working directory",
    description:
      "Handler file or folder inside the image, passed to 'konductor run'; repeat for more",
  },
  'namespace-scoped': {
    description:
      'Roles in the watched namespaces instead of a ClusterRole; the operator runs with --namespace for each',
  },
  'watch-namespace': {
    value: '<ns>',
    multiple: true,
    defaultNote: "the operator's namespace",
    description: 'With --namespace-scoped: a namespace to serve; repeat for more',
    parse: check.labelName,
  },
  crd: {
    value: '<file|folder>',
    multiple: true,
    description:
      'CustomResourceDefinition YAML, to resolve resource names exactly; repeat for more. ' +
      'Folders: every *.yaml and *.yml file',
  },
  rule: {
    value: '<rule>',
    multiple: true,
    description:
      'An extra rule: [<group>/]<resource>[/<subresource>]=<verb>,... ' +
      "e.g. 'apps/deployments=get,list,watch,create,patch', 'secrets=get', 'core/pods/log=get' " +
      `(without a group: the core group). Verbs: ${VERBS.join(', ')}. Repeat for more`,
    parse: (setting: Setting) => {
      try {
        return parseRule(setting.value);
      } catch (error) {
        if (error instanceof RuleSyntaxError) throw new UsageError(error.message);
        throw error;
      }
    },
  },
  'lease-name': {
    value: '<name>',
    defaultNote: 'the --name',
    description: 'Name of the leader-election Lease',
    parse: check.subdomainName,
  },
  sharding: {
    description:
      'Replicas share the objects out (konductor run --sharding): the Deployment runs 3 replicas with ' +
      "--sharding, and the Lease Role covers every Lease of the operator's namespace (member Leases are named at each start)",
  },
  identity: {
    value: '<name>',
    defaultNote: `konductor run's: ${DEFAULT_IDENTITY}`,
    description:
      "The operator's identity, passed to 'konductor run' " +
      '(the prefix of its annotations and finalizer; see konductor run --help)',
    parse: (setting: Setting) => check.identity(setting).name,
  },
  storage: {
    value: '<place>',
    defaultNote: `konductor run's: ${DEFAULT_STORAGE}`,
    description:
      "Where the operator keeps each object's diff-base and handler progress, passed to 'konductor run': " +
      'annotations or status (one write per change; see konductor run --help)',
    parse: (setting: Setting) => check.oneOf(setting, STORAGES),
  },
  monitoring: {
    description:
      "Also print a PodMonitor for the operator's /metrics, a PrometheusRule with its alerts, and its " +
      'Grafana dashboard in a ConfigMap labelled grafana_dashboard=1 (the first two need the Prometheus ' +
      "operator's CRDs)",
  },
  'monitoring-label': {
    value: '<key=value>',
    multiple: true,
    description:
      'With --monitoring: a label for the PodMonitor, PrometheusRule and ConfigMap, for the selectors of ' +
      'your Prometheus (podMonitorSelector, ruleSelector), e.g. release=kube-prometheus-stack; repeat for more',
    parse: label,
  },
  'dashboard-namespace': {
    value: '<ns>',
    defaultNote: "the operator's namespace",
    description:
      "With --monitoring: the namespace of the dashboard's ConfigMap, one Grafana's sidecar watches",
    parse: check.labelName,
  },
  'runbook-url': {
    value: '<url>',
    defaultNote: "konductor's docs/running/alerts.md",
    description:
      "With --monitoring: the page the alerts' runbook_url annotations and the dashboard link to; " +
      "each alert's #anchor is appended",
    parse: pageUrl,
  },
  help: { short: 'h', description: 'Show this help' },
} satisfies FlagTable;

/** `konductor manifests`. */
export const MANIFESTS: CommandSpec<typeof MANIFESTS_FLAGS> = {
  name: 'manifests',
  args: '<file|folder>...',
  output: 'deploy.yaml',
  summary: 'Print the ServiceAccount, RBAC and Deployment the handlers need.',
  description: `Prints the YAML to deploy an operator made of the given handler files: a ServiceAccount,
least-privilege RBAC derived from the handlers, a leader-election Role and a hardened Deployment.
Loads the files as 'konductor run' does; needs no cluster. Apply the output with kubectl apply -f.

RBAC derived from the handlers (for each resource a handler watches):
  @on.event only                 list, watch
  any other handler (create, update, deletion, resume, field, reconcile, timer, daemon)
                                 get, list, watch, patch, and patch on <plural>/status
  @on.owned children, reconcile watches, @on.cache and @on.index
                                 list, watch
  what a reconcile owns          get, list, watch, create, patch, delete
  Events (core/v1)               create, patch
  Leases (coordination.k8s.io)   list, create; get, update of the operator's Lease (its namespace)
Anything else the handlers do with the API (creating Deployments, reading Secrets, ...) is up to
you: declare it with --rule.

Resource names are resolved without a cluster: from the CRDs given with --crd (exact plural, scope
and status subresource), from a table of built-in resources, else a lower-case name ending in 's'
is taken as the plural and any other name (a kind, singular or short name) is lower-cased and
pluralized by English rules; guessed names are reported on stderr and in a YAML comment. Status
patch is granted unless a CRD or the built-in table says there is no status subresource.

With --monitoring: a PodMonitor scraping /metrics on the health port (job: the --name), a
PrometheusRule with the alerts of konductor's monitoring/konductor-alerts.yaml for that namespace
and job only, and the Grafana dashboard monitoring/konductor-dashboard.json in a ConfigMap. Each
alert's runbook: docs/running/alerts.md.`,
  flags: MANIFESTS_FLAGS,
};

/**
 * `konductor manifests <file|folder>... [options]`, or the ask for its help.
 * @throws {@link UsageError} without handler files, or for a refused flag value.
 */
export function parseManifests(
  args: readonly string[],
): { help: true } | { help: false; options: ManifestsOptions } {
  const { values, positionals } = parseFlags(MANIFESTS, args);
  if (values.help) return { help: true };
  if (positionals.length === 0) {
    throw new UsageError(
      'manifests needs at least one handler file or folder: konductor manifests <file|folder>...',
    );
  }
  const flags = new FlagReader(MANIFESTS_FLAGS, values, {});
  const name = flags.get('name');
  const namespace =
    flags.get('namespace') ?? check.labelName({ value: name, source: '--namespace' });
  const leaseName =
    flags.get('lease-name') ?? check.subdomainName({ value: name, source: '--lease-name' });
  const identity = flags.get('identity');
  const storage = flags.get('storage');
  const scoped = flags.get('namespace-scoped') === true;
  if (flags.given('watch-namespace') && !scoped) {
    throw new UsageError(
      '--watch-namespace needs --namespace-scoped (without it the operator serves all namespaces with a ClusterRole)',
    );
  }
  const watchNamespaces = scoped
    ? check.unique(flags.get('watch-namespace') ?? [namespace])
    : undefined;
  const monitoring = flags.get('monitoring') === true;
  for (const flag of ['monitoring-label', 'dashboard-namespace', 'runbook-url'] as const) {
    if (flags.given(flag) && !monitoring) {
      throw new UsageError(
        `--${flag} needs --monitoring (without it nothing is printed for monitoring)`,
      );
    }
  }
  const runbookUrl = flags.get('runbook-url');
  return {
    help: false,
    options: {
      files: positionals,
      name,
      namespace,
      createNamespace: flags.get('create-namespace') === true,
      image: flags.get('image') ?? `${name}:latest`,
      runPaths: flags.get('run-path') ?? positionals,
      watchNamespaces,
      crdPaths: flags.get('crd') ?? [],
      extraRules: flags.get('rule') ?? [],
      leaseName,
      identity,
      storage,
      sharding: flags.get('sharding') === true,
      monitoring: monitoring
        ? {
            labels: Object.fromEntries(flags.get('monitoring-label') ?? []),
            dashboardNamespace: flags.get('dashboard-namespace') ?? namespace,
            ...(runbookUrl === undefined ? {} : { runbookUrl }),
          }
        : undefined,
    },
  };
}
