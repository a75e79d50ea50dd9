// `konductor disconnect` and `konductor uninstall`: what they act on is what an operator run with the
// same flags serves, so they share run's scope flags (same variables, same checks).
import { DEFAULT_IDENTITY } from '../../framework/state/identity.js';
import { FlagReader, parseFlags, type CommandSpec, type FlagTable } from '../flags.js';
import * as check from '../validators.js';
import { UsageError } from '../validators.js';
import { DEFAULT_LEASE_NAME, RUN_FLAGS, namespaceScope } from './run.js';

/** Default of `konductor uninstall --timeout`, in seconds. */
export const DEFAULT_UNINSTALL_TIMEOUT = 300;

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

/** The flags both commands take: run's, described for what they select here. */
const SCOPE_FLAGS = {
  namespace: {
    ...RUN_FLAGS.namespace,
    description:
      "Only objects in this namespace; repeat for more ('*' and '?' match names). Cluster-scoped resources are " +
      "always included, as 'konductor run' serves them whatever its namespaces",
  },
  'all-namespaces': {
    ...RUN_FLAGS['all-namespaces'],
    description: 'All namespaces (the default; cannot be combined with --namespace)',
  },
  context: RUN_FLAGS.context,
  kubeconfig: {
    ...RUN_FLAGS.kubeconfig,
    defaultNote: '$KUBECONFIG, ~/.kube/config, or in-cluster',
  },
  identity: {
    ...RUN_FLAGS.identity,
    description:
      "The operator's identity, as given to 'konductor run': its finalizer <identity>/finalizer, its annotations " +
      '<identity>/..., its status["<identity>"] and its default Lease',
  },
  'lease-namespace': {
    ...RUN_FLAGS['lease-namespace'],
    defaultNote: 'in a pod, its own; required elsewhere',
    description: "The operator's own namespace, where its Lease is (konductor-system for deploy/)",
  },
  'lease-name': {
    ...RUN_FLAGS['lease-name'],
    defaultNote: `the identity's, ${DEFAULT_LEASE_NAME} for ${DEFAULT_IDENTITY}`,
    description: "Name of the operator's Lease",
  },
  'dry-run': { description: 'Print what would be done, one line per object; write nothing' },
} satisfies FlagTable;

const HELP_FLAG = { help: { short: 'h', description: 'Show this help' } } satisfies FlagTable;

/** The flags of `disconnect`. */
export const DISCONNECT_FLAGS = {
  ...SCOPE_FLAGS,
  force: { description: 'Release even while a leader holds the Lease' },
  ...HELP_FLAG,
} satisfies FlagTable;

/** The flags of `uninstall`. */
export const UNINSTALL_FLAGS = {
  ...SCOPE_FLAGS,
  timeout: {
    value: '<duration>',
    default: `${DEFAULT_UNINSTALL_TIMEOUT / 60}m`,
    description:
      'How long to wait for the objects to be gone (300, 90s, 5m, PT5M); 0 does not wait',
    parse: check.duration,
  },
  crd: {
    value: '<name>',
    multiple: true,
    description:
      'A CustomResourceDefinition to delete once its objects are gone, as <plural>.<group> ' +
      '(e.g. etcdclusters.etcd.database.coreos.com); repeat for more',
    parse: check.crdName,
  },
  ...HELP_FLAG,
} satisfies FlagTable;

/** `konductor disconnect`. */
export const DISCONNECT: CommandSpec<typeof DISCONNECT_FLAGS> = {
  name: 'disconnect',
  args: '<file|folder>...',
  summary:
    'Release every object from the operator (finalizer and bookkeeping), ' +
    'leaving the applications running and unmanaged.',
  description: `Releases every object of the resources the handler files declare from the operator, so that the
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
its holder is set and its renewTime plus leaseDurationSeconds is in the future.`,
  footer: `Prints one line per released object (and per failure), then:
  disconnect: <n> objects seen, <n> released, <n> already clean, <n> failed
Exit codes: 0 every object is released (or was clean), 1 some failed or the Lease is held,
2 bad usage.`,
  flags: DISCONNECT_FLAGS,
};

/** `konductor uninstall`. */
export const UNINSTALL: CommandSpec<typeof UNINSTALL_FLAGS> = {
  name: 'uninstall',
  args: '<file|folder>...',
  summary:
    "Delete every object of the handlers' custom resources, wait until they are gone, " +
    'then delete the CRDs named with --crd.',
  description: `Removes what an operator manages: deletes every object of the custom resources the handler files
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
konductor disconnect or start the operator".`,
  footer: `Exit codes: 0 every object and every named CRD is gone, 1 something is left (listed with the
reason), 2 bad usage.`,
  flags: UNINSTALL_FLAGS,
};

type Release =
  | { kind: 'help' }
  | { kind: 'disconnect'; options: DisconnectOptions }
  | { kind: 'uninstall'; options: UninstallOptions };

/**
 * `konductor disconnect|uninstall <file|folder>... [options]`, or the ask for its help. The other
 * command's own flags are parsed too, to say whose they are.
 * @throws {@link UsageError} without handler files, or for a refused flag or variable.
 */
export function parseRelease(
  command: 'disconnect' | 'uninstall',
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Release {
  const [spec, other] =
    command === 'disconnect' ? [DISCONNECT, UNINSTALL] : [UNINSTALL, DISCONNECT];
  const { values, positionals: files } = parseFlags(spec, args, other.flags);
  if (values.help) return { kind: 'help' };
  for (const flag of Object.keys(other.flags).filter((name) => !(name in spec.flags))) {
    if (values[flag] !== undefined) {
      throw new UsageError(
        `--${flag} is an option of konductor ${other.name}, not of ${command} (see konductor ${command} --help)`,
      );
    }
  }
  if (files.length === 0) {
    throw new UsageError(
      `${command} needs the operator's handler files or folders: konductor ${command} <file|folder>...`,
    );
  }
  const flags = new FlagReader(SCOPE_FLAGS, values, env);
  const identity = flags.get('identity');
  const scope: ReleaseScope = {
    files,
    namespaces: namespaceScope(flags).namespaces,
    context: flags.get('context'),
    kubeconfig: flags.get('kubeconfig'),
    identity: identity.name,
    leaseNamespace: flags.get('lease-namespace'),
    leaseName: flags.get('lease-name') ?? identity.leaseName,
    dryRun: flags.get('dry-run') === true,
  };
  if (command === 'disconnect')
    return { kind: 'disconnect', options: { ...scope, force: values.force === true } };
  const uninstall = new FlagReader(UNINSTALL_FLAGS, values, env);
  return {
    kind: 'uninstall',
    options: {
      ...scope,
      timeoutSeconds: uninstall.get('timeout'),
      crds: check.unique(uninstall.get('crd') ?? []),
    },
  };
}
