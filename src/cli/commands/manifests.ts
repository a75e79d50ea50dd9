// `konductor manifests <files>`: the deploy YAML for the user's handlers, with RBAC derived from
// what they declare. Works offline (no cluster): see ./resource-names.ts for how names are resolved.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadAll } from 'js-yaml';
import { loadHandlers } from '../load-handlers.js';
import { Identity, InvalidIdentityError } from '../../framework/state/identity.js';
import { STORAGES, type Storage } from '../../framework/state/storage.js';
import { UsageError } from '../options.js';
import { manifestDocuments, renderManifests } from './manifest-objects.js';
import type { WebhookInstall } from './webhook-manifests.js';
import { deriveRbacRules, parseRule, RuleSyntaxError, VERBS, type PolicyRule } from './rbac-rules.js';
import { crdResources, type KnownResource } from './resource-names.js';

const DEFAULT_NAME = 'konductor-operator';

/** Help text for `konductor manifests --help`. */
export const MANIFESTS_HELP = `Usage: konductor manifests <file|folder>... [options] > deploy.yaml

Prints the YAML to deploy an operator made of the given handler files: a ServiceAccount,
least-privilege RBAC derived from the handlers, a leader-election Role and a hardened Deployment.
Loads the files as 'konductor run' does; needs no cluster. Apply the output with kubectl apply -f.

RBAC derived from the handlers (for each resource a handler watches):
  @on.event only                 list, watch
  any other handler (create, update, deletion, resume, field, @timer, @daemon)
                                 get, list, watch, patch, and patch on <plural>/status
  Events (core/v1)               create
  Leases (coordination.k8s.io)   create; get, update of the operator's Lease only, in its namespace
Anything else the handlers do with the API (creating Deployments, reading Secrets, ...) is up to
you: declare it with --rule.

Resource names are resolved without a cluster: from the CRDs given with --crd (exact plural, scope
and status subresource), from a table of built-in resources, else a lower-case name ending in 's'
is taken as the plural and any other name (a kind, singular or short name) is lower-cased and
pluralized by English rules; guessed names are reported on stderr and in a YAML comment. Status
patch is granted unless a CRD or the built-in table says there is no status subresource.

Options:
      --name <name>              Name of the ServiceAccount, Deployment, Roles and ClusterRole
                                 (ClusterRoles are cluster-wide: pick a unique name).
                                 Default ${DEFAULT_NAME}.
      --namespace <ns>           The operator's namespace (ServiceAccount, Deployment, Lease).
                                 Default: the --name.
      --create-namespace         Also print the Namespace.
      --image <ref>              Container image with the handlers and konductor (default <name>:latest).
      --run-path <path>          Handler file or folder inside the image, passed to 'konductor run';
                                 repeat for more. Default: the files as given (relative to the
                                 image's working directory).
      --namespace-scoped         Roles in the watched namespaces instead of a ClusterRole; the
                                 operator runs with --namespace for each.
      --watch-namespace <ns>     With --namespace-scoped: a namespace to serve; repeat for more.
                                 Default: the operator's namespace.
      --crd <file|folder>        CustomResourceDefinition YAML, to resolve resource names exactly;
                                 repeat for more. Folders: every *.yaml and *.yml file.
      --rule <rule>              An extra rule: [<group>/]<resource>[/<subresource>]=<verb>,...
                                 e.g. 'apps/deployments=get,list,watch,create,patch', 'secrets=get',
                                 'core/pods/log=get' (without a group: the core group). Verbs:
                                 ${VERBS.join(', ')}. Repeat for more.
      --lease-name <name>        Name of the leader-election Lease (default: the --name).
      --identity <name>          The operator's identity, passed to 'konductor run' (the prefix of
                                 its annotations and finalizer; see konductor run --help).
                                 Default: konductor run's (konductor.dev).
      --storage <place>          Where the operator keeps each object's diff-base and handler
                                 progress, passed to 'konductor run': annotations (default) or
                                 status (one write per change; see konductor run --help).
  -h, --help                     Show this help.
`;

const OPTIONS = {
  name: { type: 'string' },
  namespace: { type: 'string' },
  'create-namespace': { type: 'boolean' },
  image: { type: 'string' },
  'run-path': { type: 'string', multiple: true },
  'namespace-scoped': { type: 'boolean' },
  'watch-namespace': { type: 'string', multiple: true },
  crd: { type: 'string', multiple: true },
  rule: { type: 'string', multiple: true },
  'lease-name': { type: 'string' },
  identity: { type: 'string' },
  storage: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * `konductor manifests <file|folder>... [options]`: writes the deploy YAML for the handlers to stdout.
 * TypeScript handler files need tsx registered beforehand, as for `konductor run`.
 * @throws {@link UsageError} for bad arguments; a LoadError for handler files that do not load.
 */
export async function manifestsCommand(args: readonly string[]): Promise<void> {
  const { values, positionals } = parse(args);
  if (values.help) {
    process.stdout.write(MANIFESTS_HELP);
    return;
  }
  if (positionals.length === 0) throw new UsageError('manifests needs at least one handler file or folder: konductor manifests <file|folder>...');
  const name = dnsLabel(values.name ?? DEFAULT_NAME, '--name');
  const namespace = dnsLabel(values.namespace ?? name, '--namespace');
  const leaseName = dnsSubdomain(values['lease-name'] ?? name, '--lease-name');
  const identity = values.identity === undefined ? undefined : identityName(values.identity);
  const storage = values.storage === undefined ? undefined : storageName(values.storage);
  if (values['watch-namespace'] && !values['namespace-scoped']) {
    throw new UsageError('--watch-namespace needs --namespace-scoped (without it the operator serves all namespaces with a ClusterRole)');
  }
  const watchNamespaces = values['namespace-scoped'] ? unique((values['watch-namespace'] ?? [namespace]).map((ns) => dnsLabel(ns, '--watch-namespace'))) : undefined;
  const extraRules = (values.rule ?? []).map(ruleFrom);
  const crds = (values.crd ?? []).flatMap(readCrdFile);
  const image = values.image ?? `${name}:latest`;
  if (image.trim() === '' || /\s/.test(image)) throw new UsageError(`--image '${image}' is not an image reference`);

  const registry = await loadHandlers([...positionals]);
  // Read cache and indexes: their resources are only listed and watched, as for an @on.event handler.
  const cacheUses = [...registry.caches, ...registry.indexes].map(({ resource }) => ({ kind: 'event' as const, resource }));
  const rbac = deriveRbacRules([...registry.handlers, ...cacheUses], { leaseName, crds, extraRules });
  if (watchNamespaces) {
    const clusterScoped = rbac.resources.filter((r) => r.namespaced === false);
    if (clusterScoped.length > 0) {
      throw new UsageError(
        `--namespace-scoped cannot serve cluster-scoped ${clusterScoped.map((r) => `${r.group || 'core'}/${r.plural}`).join(', ')}: a Role grants nothing on them; leave out --namespace-scoped`,
      );
    }
  }
  for (const guessed of rbac.resources.filter((r) => r.source === 'guessed')) {
    process.stderr.write(
      `konductor: guessed the plural '${guessed.plural}' for ${guessed.writtenAs.map((n) => `'${n}'`).join(', ')} in ${guessed.group || 'the core group'} (no cluster to ask); pass --crd <file> to resolve it exactly\n`,
    );
  }
  const documents = manifestDocuments(rbac, {
    name,
    namespace,
    createNamespace: values['create-namespace'] === true,
    image,
    runPaths: values['run-path'] ?? positionals,
    watchNamespaces,
    leaseName,
    identity,
    storage,
    webhooks: webhookInstall(registry, identity),
  });
  process.stdout.write(renderManifests(documents));
}

function parse(args: readonly string[]): ReturnType<typeof parseStrict> {
  try {
    return parseStrict(args);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const option = /'([^']+)'/.exec(message)?.[1];
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) throw new UsageError(`unknown option '${option}' (see konductor manifests --help)`);
    throw new UsageError(`${message.split('\n')[0] ?? message} (see konductor manifests --help)`);
  }
}

function parseStrict(args: readonly string[]) {
  return parseArgs({ args: [...args], options: OPTIONS, allowPositionals: true, strict: true });
}

function ruleFrom(text: string): PolicyRule {
  try {
    return parseRule(text);
  } catch (error) {
    if (error instanceof RuleSyntaxError) throw new UsageError(error.message);
    throw error;
  }
}

/** The CRDs in a YAML file, or in a folder's *.yaml/*.yml files. */
function readCrdFile(path: string): KnownResource[] {
  const info = statSync(path, { throwIfNoEntry: false });
  if (!info) throw new UsageError(`--crd ${path} does not exist`);
  const files = info.isDirectory()
    ? readdirSync(path)
        .filter((file) => /\.ya?ml$/.test(file))
        .sort()
        .map((file) => join(path, file))
    : [path];
  return files.flatMap((file) => {
    try {
      return crdResources(loadAll(readFileSync(file, 'utf8')));
    } catch (error) {
      throw new UsageError(`--crd ${file}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    }
  });
}

/** A name Kubernetes accepts for a namespace, ServiceAccount or Deployment (RFC 1123 label). */
function dnsLabel(value: string, flag: string): string {
  if (value.length > 63 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(value)) {
    throw new UsageError(`${flag} '${value}' is not a valid name: use at most 63 lower-case letters, digits and '-'`);
  }
  return value;
}

/** A storage as `konductor run --storage` takes it, checked here so a bad one fails before anything is applied. */
function storageName(raw: string): Storage {
  const found = STORAGES.find((storage) => storage === raw.toLowerCase());
  if (found === undefined) throw new UsageError(`--storage must be one of ${STORAGES.join(', ')}; got '${raw}'`);
  return found;
}

/** An identity as `konductor run --identity` takes it, checked here so a bad one fails before anything is applied. */
function identityName(raw: string): string {
  try {
    return Identity.parse(raw).name;
  } catch (error) {
    if (error instanceof InvalidIdentityError) throw new UsageError(`--identity: ${error.message}`);
    throw error;
  }
}

/** A Lease name (RFC 1123 subdomain). */
function dnsSubdomain(value: string, flag: string): string {
  if (value.length > 253 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(value)) {
    throw new UsageError(`${flag} '${value}' is not a valid name: use lower-case letters, digits, '-' and '.'`);
  }
  return value;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** The webhooks the handlers declare (admission, conversions), or undefined for none. */
function webhookInstall(registry: Awaited<ReturnType<typeof loadHandlers>>, identity: string | undefined): WebhookInstall | undefined {
  const admission = registry.admission().length > 0;
  const conversions = registry.conversions().map((spec) => `${spec.name}.${spec.group}`);
  if (!admission && conversions.length === 0) return undefined;
  return { identity: identity ?? Identity.DEFAULT.name, admission, conversions };
}
