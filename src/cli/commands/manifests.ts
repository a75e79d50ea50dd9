// `konductor manifests <files>`: the deploy YAML for the user's handlers, with RBAC derived from
// what they declare. Works offline (no cluster): see ./resource-names.ts for how names are resolved.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { loadHandlers } from '../load-handlers.js';
import { Identity } from '../../framework/state/identity.js';
import { commandHelp } from '../help.js';
import { MANIFESTS, parseManifests } from '../options/manifests.js';
import { UsageError } from '../validators.js';
import { manifestDocuments, renderManifests } from './manifest-objects.js';
import { monitoringDocuments, readMonitoringFiles } from './monitoring-manifests.js';
import type { WebhookInstall } from './webhook-manifests.js';
import { deriveRbacRules } from './rbac-rules.js';
import { crdResources, type KnownResource } from './resource-names.js';

/**
 * `konductor manifests <file|folder>... [options]`: writes the deploy YAML for the handlers to stdout.
 * TypeScript handler files need tsx registered beforehand, as for `konductor run`.
 * @throws {@link UsageError} for bad arguments; a LoadError for handler files that do not load.
 */
export async function manifestsCommand(args: readonly string[]): Promise<void> {
  const parsed = parseManifests(args);
  if (parsed.help) {
    process.stdout.write(commandHelp(MANIFESTS));
    return;
  }
  const {
    files,
    name,
    namespace,
    leaseName,
    identity,
    storage,
    watchNamespaces,
    extraRules,
    image,
  } = parsed.options;
  const crds = parsed.options.crdPaths.flatMap(readCrdFile);

  const registry = await loadHandlers([...files]);
  // Read cache and indexes: their resources are only listed and watched, as for an @on.event handler.
  const cacheUses = [...registry.caches, ...registry.indexes].map(({ resource }) => ({
    kind: 'event' as const,
    resource,
  }));
  const { sharding } = parsed.options;
  const rbac = deriveRbacRules([...registry.handlers, ...cacheUses], {
    leaseName,
    crds,
    extraRules,
    sharding,
  });
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
    createNamespace: parsed.options.createNamespace,
    image,
    runPaths: parsed.options.runPaths,
    watchNamespaces,
    leaseName,
    identity,
    storage,
    sharding,
    webhooks: webhookInstall(registry, identity),
  });
  const monitoring = parsed.options.monitoring;
  if (monitoring) {
    documents.push(
      ...monitoringDocuments({ name, namespace, ...monitoring }, readMonitoringFiles()),
    );
  }
  process.stdout.write(renderManifests(documents));
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
      throw new UsageError(
        `--crd ${file}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
      );
    }
  });
}

/** The webhooks the handlers declare (admission, conversions), or undefined for none. */
function webhookInstall(
  registry: Awaited<ReturnType<typeof loadHandlers>>,
  identity: string | undefined,
): WebhookInstall | undefined {
  const admission = registry.admission().length > 0;
  const conversions = registry.conversions().map((spec) => `${spec.name}.${spec.group}`);
  if (!admission && conversions.length === 0) return undefined;
  return { identity: identity ?? Identity.DEFAULT.name, admission, conversions };
}
