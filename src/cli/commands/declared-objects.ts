// What `konductor disconnect` and `konductor uninstall` share: connecting as `konductor run` does,
// the resources the handler files declare, their objects in the operator's namespaces, and the
// operator's Lease. Every path is built by the framework's resource paths (segments encoded).
import { ApiClient } from '../../framework/api/api-client.js';
import { ApiError } from '../../framework/api/api-error.js';
import { discoverResource, ResourceNotFoundError } from '../../framework/api/discovery.js';
import { loadKubeconfig } from '../../framework/api/kubeconfig.js';
import { withoutManagedFields } from '../../framework/api/managed-fields.js';
import {
  collectionPath,
  LEASES,
  objectPath,
  resourceId,
  type Resource,
} from '../../framework/api/resource.js';
import type { HandlerSpec } from '../../framework/intents/handler-specs.js';
import type { KubeObject } from '../../framework/objects/kube-object.js';
import type { Registry } from '../../framework/registry/registry.js';
import { isNamespaceGlob, matchNamespace } from '../../framework/runtime/namespace-patterns.js';
import type { Lease } from '../../framework/runtime/lease-record.js';
import { loadHandlers } from '../load-handlers.js';
import type { ReleaseScope } from '../options/release.js';
import { UsageError } from '../validators.js';
import { podNamespace } from '../own-namespace.js';

/** A failure before anything was written: one line, exit code 1. */
export class CommandError extends Error {
  override readonly name = 'CommandError';
}

/** One declared resource as the API server serves it, with the handlers that name it. */
export interface DeclaredResource {
  resource: Resource;
  handlers: HandlerSpec[];
}

/** The resources of the handler files: served ones, and the names the API server does not serve. */
export interface DeclaredResources {
  served: DeclaredResource[];
  /** `<name> <apiVersion>` and why, for names not served (no CRD installed: no objects either). */
  unserved: string[];
}

/** How many objects are listed per request. */
const PAGE_SIZE = 500;
/** How long the reachability check waits. */
const REACHABILITY_TIMEOUT_MS = 5_000;
/** Longest Lease holder repeated in output: anyone allowed to write the Lease chooses it. */
const MAX_HOLDER_CHARS = 128;

/** A client for the kubeconfig of `scope`, checked with one cheap request as `konductor run` does. */
export async function connect(
  scope: Pick<ReleaseScope, 'kubeconfig' | 'context'>,
): Promise<ApiClient> {
  let client: ApiClient;
  try {
    client = new ApiClient(loadKubeconfig({ path: scope.kubeconfig, context: scope.context }));
  } catch (error) {
    throw new CommandError(oneLine(error));
  }
  try {
    await client.request('GET', '/version', { timeoutMs: REACHABILITY_TIMEOUT_MS });
  } catch (error) {
    client.close();
    throw new CommandError(
      `cannot reach the cluster at ${client.server}: ${oneLine(error).replace(/^GET \/version: /, '')}`,
    );
  }
  return client;
}

/** Loads the handler files (as run does) and resolves the resources they declare, grouped as the operator groups them. */
export async function declaredResources(
  client: ApiClient,
  files: string[],
): Promise<DeclaredResources> {
  const registry: Registry = await loadHandlers(files);
  const byName = new Map<string, HandlerSpec[]>();
  for (const spec of registry.handlers) {
    const key = `${spec.resource.apiVersion} ${spec.resource.name.toLowerCase()}`;
    byName.set(key, [...(byName.get(key) ?? []), spec]);
  }
  const served = new Map<string, DeclaredResource>();
  const unserved: string[] = [];
  for (const specs of byName.values()) {
    const selector = specs[0]!.resource;
    try {
      const resource = await discoverResource(client, selector);
      const id = resourceId(resource);
      const entry = served.get(id) ?? { resource, handlers: [] };
      entry.handlers.push(...specs);
      served.set(id, entry);
    } catch (error) {
      if (!(error instanceof ResourceNotFoundError)) throw error;
      unserved.push(`${selector.name} ${selector.apiVersion}: ${error.message}`);
    }
  }
  return { served: [...served.values()], unserved };
}

/** `etcdclusters.etcd.database.coreos.com`, or `namespaces` for the core group: as kubectl names it. */
export function resourceName(resource: Pick<Resource, 'group' | 'plural'>): string {
  return resource.group ? `${resource.plural}.${resource.group}` : resource.plural;
}

/** `namespace/name`, or `name` for a cluster-scoped object. */
export function objectName(object: KubeObject): string {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name ?? ''}` : (name ?? '');
}

/**
 * Every object of `resource` an operator with these namespaces serves: in each named namespace, or
 * cluster-wide filtered by the globs, or cluster-wide; a cluster-scoped resource whatever the namespaces.
 */
export async function listInScope(
  client: ApiClient,
  resource: Resource,
  namespaces: readonly string[],
): Promise<KubeObject[]> {
  if (!resource.namespaced || namespaces.length === 0)
    return listAll(client, collectionPath(resource));
  if (namespaces.some(isNamespaceGlob)) {
    const all = await listAll(client, collectionPath(resource));
    return all.filter((object) =>
      namespaces.some((pattern) => matchNamespace(pattern, object.metadata?.namespace ?? '')),
    );
  }
  const objects: KubeObject[] = [];
  for (const namespace of namespaces)
    objects.push(...(await listAll(client, collectionPath(resource, namespace))));
  return objects;
}

/** A whole collection, page by page. */
export async function listAll(client: ApiClient, path: string): Promise<KubeObject[]> {
  const objects: KubeObject[] = [];
  let token: string | undefined;
  do {
    const page = await client.request<{ items?: KubeObject[]; metadata?: { continue?: string } }>(
      'GET',
      path,
      { query: { limit: PAGE_SIZE, continue: token } },
    );
    for (const item of page.items ?? []) objects.push(withoutManagedFields(item));
    token = page.metadata?.continue || undefined;
  } while (token !== undefined);
  return objects;
}

/** A Lease whose holder still leads. */
export interface LiveLease {
  namespace: string;
  name: string;
  /** The holder, printable and cut. */
  holder: string;
  /** When it expires unless renewed; undefined when the Lease says no renew time. */
  until: Date | undefined;
}

/**
 * Whether `lease` has a live holder at `now`: a holder is set and its renewTime (else acquireTime)
 * plus leaseDurationSeconds lies ahead. Judged by the times written in it, as a one-off command
 * cannot watch the Lease change; clocks skewed by more than the lease duration misjudge it, which
 * --force (disconnect) and the reports (uninstall) leave to the user.
 */
export function liveHolder(
  lease: Lease,
  now: number,
): { holder: string; until: Date | undefined } | undefined {
  const spec = lease.spec ?? {};
  const holder = (spec.holderIdentity ?? '')
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .slice(0, MAX_HOLDER_CHARS);
  if (holder === '') return undefined;
  const renewed = Date.parse(spec.renewTime ?? spec.acquireTime ?? '');
  if (Number.isNaN(renewed)) return { holder, until: undefined };
  const until = renewed + (spec.leaseDurationSeconds ?? 15) * 1000;
  return until > now ? { holder, until: new Date(until) } : undefined;
}

/**
 * The namespace the operator's Lease is in: `--lease-namespace` (or its variable), else, in a pod, the
 * pod's own namespace, as `konductor run` takes it. Never searched for across namespaces: anyone who
 * can create a Lease in some namespace could name one like the operator's.
 * @throws {@link UsageError} outside a pod without `--lease-namespace`.
 */
export function leaseNamespaceOf(
  scope: Pick<ReleaseScope, 'leaseNamespace'>,
  inPod: string | undefined = podNamespace(),
): string {
  const namespace = scope.leaseNamespace ?? inPod;
  if (namespace === undefined) {
    throw new UsageError(
      "--lease-namespace is required outside a pod: give the operator's own namespace, where its Lease is (konductor-system for deploy/, default for a local 'konductor run')",
    );
  }
  return namespace;
}

/** The operator's Lease in its own namespace (see {@link leaseNamespaceOf}), if a live holder leads it. */
export async function liveLeases(
  client: ApiClient,
  scope: Pick<ReleaseScope, 'leaseNamespace' | 'leaseName'>,
  now: number,
): Promise<LiveLease[]> {
  const namespace = leaseNamespaceOf(scope);
  const path = objectPath(LEASES, namespace, scope.leaseName);
  let lease: Lease;
  try {
    lease = await client.request<Lease>('GET', path);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return [];
    throw error;
  }
  const held = liveHolder(lease, now);
  return held ? [{ namespace, name: scope.leaseName, ...held }] : [];
}

/** `"operator-7d9f" (Lease ops/konductor-leader, held until 2026-11-24T13:05:10Z)`; the holder quoted, as whoever writes the Lease chooses it. */
export function describeLease(lease: LiveLease): string {
  const until = lease.until
    ? `held until ${lease.until.toISOString()}`
    : 'held, no renew time given';
  return `${JSON.stringify(lease.holder)} (Lease ${lease.namespace}/${lease.name}, ${until})`;
}

/** Runs `work` on every item, at most `limit` at a time. */
export async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** An error as one line. */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s*\n\s*/g, ' ').trim();
}
