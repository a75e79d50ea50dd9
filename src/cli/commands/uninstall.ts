// `konductor uninstall <files>`: deletes every object of the declared custom resources while the
// operator runs (its delete handlers clean up, the garbage collector takes owned children), waits
// for them with a progress display, reports what is left and why, then deletes the named CRDs.
// Its flags and help: ../options/release.ts.
import type { ApiClient } from '../../framework/api/api-client.js';
import { ApiError } from '../../framework/api/api-error.js';
import {
  groupVersionPath,
  objectPath,
  pathSegment,
  type Resource,
} from '../../framework/api/resource.js';
import { sleep } from '../../framework/clock/long-timeout.js';
import type { KubeObject } from '../../framework/objects/kube-object.js';
import {
  deleteOwnWebhookConfigurations,
  ownWebhookConfigurations,
} from '../../framework/admission/configuration-writer.js';
import { Identity } from '../../framework/state/identity.js';
import type { UninstallOptions } from '../options/release.js';
import {
  CommandError,
  connect,
  declaredResources,
  describeLease,
  eachLimited,
  listInScope,
  liveLeases,
  objectName,
  oneLine,
  resourceName,
  type DeclaredResource,
} from './declared-objects.js';
import { whyLeft } from './leftover.js';

/** Deletions sent at once. */
const PARALLEL = 16;
/** How often the objects left are counted. */
const TICK_MS = 1_000;
/** Off a terminal, an unchanged count is repeated this often, so a log shows the command is alive. */
const HEARTBEAT_MS = 10_000;
/** Objects left listed one by one; the rest are counted. */
const MAX_LISTED = 50;
/** How long a CRD with no objects left may take to go, at least. */
const MIN_CRD_WAIT_MS = 30_000;
const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** An object still there, and the resource it belongs to. */
interface Left {
  target: DeclaredResource;
  object: KubeObject;
}

/** A CustomResourceDefinition, as far as uninstall reads it. */
interface Crd extends KubeObject {
  spec?: {
    group?: string;
    names?: { plural?: string };
    versions?: { name: string; served?: boolean; storage?: boolean }[];
  };
}

/** `konductor uninstall`: exit code 0 when every object and named CRD is gone, 1 when something is left. */
export async function uninstall(
  options: UninstallOptions,
  out: NodeJS.WriteStream | NodeJS.WritableStream = process.stdout,
): Promise<void> {
  const identity = Identity.parse(options.identity);
  const client = await connect(options);
  try {
    const { served, unserved } = await declaredResources(client, options.files);
    for (const line of unserved) out.write(`skipped ${line}\n`);
    const targets: DeclaredResource[] = [];
    for (const target of served) {
      if (await isCustomResource(client, target.resource)) targets.push(target);
      else
        out.write(
          `skipped ${resourceName(target.resource)}: a built-in resource the handlers watch; uninstall deletes only custom resources\n`,
        );
    }
    const leases = await liveLeases(client, options, Date.now());
    const operator = leases.length > 0 ? leases.map(describeLease).join('; ') : undefined;
    out.write(
      operator
        ? `operator running: ${operator}\n`
        : `no operator running (no live Lease ${options.leaseName}): objects holding ${identity.finalizer} stay until it starts or konductor disconnect releases them\n`,
    );
    if (options.dryRun) return await dryRun(client, targets, options, identity.name, out);

    const started = Date.now();
    const deadline = started + options.timeoutSeconds * 1000;
    const errors = new Map<string, string>();
    let left = await deletePass(client, targets, options.namespaces, errors, out, true);
    const progress = new Progress(out, options.timeoutSeconds);
    while (left.length > 0 && Date.now() < deadline) {
      progress.show(left, started);
      await sleep(Math.min(TICK_MS, Math.max(0, deadline - Date.now())));
      left = await deletePass(client, targets, options.namespaces, errors, out, false);
    }
    progress.end();
    let failed = false;
    if (left.length === 0) {
      out.write(`all objects gone after ${seconds(Date.now() - started)}\n`);
    } else {
      failed = true;
      out.write(
        `${left.length} object${left.length === 1 ? '' : 's'} left after ${options.timeoutSeconds}s:\n`,
      );
      for (const { target, object } of left.slice(0, MAX_LISTED)) {
        const deleteHandlerIds = target.handlers
          .filter((h) => h.kind === 'delete')
          .map((h) => h.id);
        const reason = whyLeft(object, {
          identity,
          operator,
          deleteHandlerIds,
          deleteError: errors.get(object.metadata?.uid ?? ''),
        });
        out.write(`  ${resourceName(target.resource)} ${objectName(object)}: ${reason}\n`);
      }
      if (left.length > MAX_LISTED) out.write(`  ... and ${left.length - MAX_LISTED} more\n`);
    }
    for (const name of options.crds) {
      if (!(await deleteCrd(client, name, Math.max(deadline, Date.now() + MIN_CRD_WAIT_MS), out)))
        failed = true;
    }
    const keep = webhooksKept(options.namespaces, left.length);
    if (keep)
      for (const name of await ownWebhookConfigurations(client, identity.name))
        out.write(`kept ${name}: ${keep}\n`);
    else
      for (const name of await deleteOwnWebhookConfigurations(client, identity.name))
        out.write(`deleted ${name}\n`);
    if (failed) process.exitCode = 1;
  } finally {
    client.close();
  }
}

/** Whether `resource` is served by a CustomResourceDefinition (built-in and aggregated resources are not uninstall's to delete). */
async function isCustomResource(client: ApiClient, resource: Resource): Promise<boolean> {
  if (resource.group === '') return false;
  try {
    await client.request(
      'GET',
      `${CRD_PATH}/${pathSegment(`${resource.plural}.${resource.group}`, 'name')}`,
    );
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return false;
    throw new CommandError(
      `cannot tell whether ${resourceName(resource)} is a custom resource: ${oneLine(error)}`,
    );
  }
}

/** Lists the objects of every target, deletes those not yet being deleted, and returns every object still there. */
async function deletePass(
  client: ApiClient,
  targets: readonly DeclaredResource[],
  namespaces: readonly string[],
  errors: Map<string, string>,
  out: NodeJS.WritableStream,
  first: boolean,
): Promise<Left[]> {
  const left: Left[] = [];
  for (const target of targets) {
    const objects = await listInScope(client, target.resource, namespaces);
    const toDelete = objects.filter((object) => object.metadata?.deletionTimestamp === undefined);
    if (first)
      out.write(
        `deleting ${toDelete.length} ${resourceName(target.resource)}${objects.length > toDelete.length ? ` (${objects.length - toDelete.length} already being deleted)` : ''}\n`,
      );
    const gone = new Set<KubeObject>();
    await eachLimited(toDelete, PARALLEL, async (object) => {
      const outcome = await deleteObject(client, target.resource, object);
      if (outcome === 'gone') gone.add(object);
      else if (outcome !== 'deleted') errors.set(object.metadata?.uid ?? '', outcome);
    });
    for (const object of objects) if (!gone.has(object)) left.push({ target, object });
  }
  return left;
}

/**
 * Deletes one object, only if it is still the one listed (its uid as a precondition), in the
 * background (its owned children go to the garbage collector). Returns `gone`, `deleted` (it may
 * stay a while, being deleted), or the error.
 */
async function deleteObject(
  client: ApiClient,
  resource: Resource,
  object: KubeObject,
): Promise<string> {
  const { namespace, name, uid } = object.metadata ?? {};
  try {
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: 'Background',
      ...(uid ? { preconditions: { uid } } : {}),
    };
    const answer = await client.request<KubeObject>(
      'DELETE',
      objectPath(resource, namespace, name ?? ''),
      { body },
    );
    // A Status answer means it is gone already; the object itself means it waits for finalizers.
    return answer?.kind === 'Status' ? 'gone' : 'deleted';
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return 'gone';
    // Another object of that name took its place: the next pass sees and deletes it.
    if (error instanceof ApiError && error.status === 409) return 'deleted';
    return oneLine(error);
  }
}

/** Prints what would be deleted, one line per object, and deletes nothing. */
async function dryRun(
  client: ApiClient,
  targets: readonly DeclaredResource[],
  options: UninstallOptions,
  identity: string,
  out: NodeJS.WritableStream,
): Promise<void> {
  let count = 0;
  for (const target of targets) {
    for (const object of await listInScope(client, target.resource, options.namespaces)) {
      count++;
      const being =
        object.metadata?.deletionTimestamp !== undefined ? ' (already being deleted)' : '';
      out.write(`would delete ${resourceName(target.resource)} ${objectName(object)}${being}\n`);
    }
  }
  for (const name of options.crds)
    out.write(`would delete CustomResourceDefinition ${name} once none of its objects is left\n`);
  const keep = webhooksKept(options.namespaces, 0);
  for (const name of await ownWebhookConfigurations(client, identity)) {
    out.write(
      keep ? `would keep ${name}: ${keep}\n` : `would delete ${name} once no object is left\n`,
    );
  }
  out.write(
    `uninstall (dry run, nothing written): ${count} objects to delete, ${options.crds.length} CRDs after them\n`,
  );
}

/**
 * Deletes one CRD unless objects of it are left anywhere in the cluster, and waits (until `deadline`)
 * for it to go. Returns whether it is gone.
 */
async function deleteCrd(
  client: ApiClient,
  name: string,
  deadline: number,
  out: NodeJS.WritableStream,
): Promise<boolean> {
  const path = `${CRD_PATH}/${pathSegment(name, 'name')}`;
  let crd: Crd;
  try {
    crd = await client.request<Crd>('GET', path);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      out.write(`CustomResourceDefinition ${name}: already gone\n`);
      return true;
    }
    out.write(`CustomResourceDefinition ${name} kept: cannot read it: ${oneLine(error)}\n`);
    return false;
  }
  const remaining = await anyObjectOf(client, crd);
  if (remaining !== undefined) {
    out.write(
      `CustomResourceDefinition ${name} kept: objects of it are left (e.g. ${remaining}); deleting it would delete them without their finalizers running\n`,
    );
    return false;
  }
  try {
    await client.request('DELETE', path, {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: crd.metadata?.uid } },
    });
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) {
      out.write(`CustomResourceDefinition ${name} kept: ${oneLine(error)}\n`);
      return false;
    }
  }
  for (;;) {
    try {
      await client.request('GET', path);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        out.write(`deleted CustomResourceDefinition ${name}\n`);
        return true;
      }
      throw error;
    }
    if (Date.now() >= deadline) {
      out.write(`CustomResourceDefinition ${name}: deleted, but still terminating\n`);
      return false;
    }
    await sleep(TICK_MS);
  }
}

/** One object of the CRD's resource anywhere in the cluster, named; undefined when there is none. */
async function anyObjectOf(client: ApiClient, crd: Crd): Promise<string | undefined> {
  const { group, names, versions = [] } = crd.spec ?? {};
  const version = versions.find((v) => v.storage) ?? versions.find((v) => v.served);
  if (!group || !names?.plural || !version) return undefined;
  const path = `${groupVersionPath(group, pathSegment(version.name, 'version'))}/${pathSegment(names.plural, 'resource')}`;
  const list = await client.request<{ items?: KubeObject[] }>('GET', path, { query: { limit: 1 } });
  const first = list.items?.[0];
  return first ? objectName(first) : undefined;
}

/** The progress display: one updating line on a terminal; otherwise a line when the count changes, at most one a second. */
class Progress {
  private lastLine = '';
  private lastAt = 0;
  private readonly tty: boolean;

  constructor(
    private readonly out: NodeJS.WriteStream | NodeJS.WritableStream,
    private readonly timeoutSeconds: number,
  ) {
    this.tty = (out as NodeJS.WriteStream).isTTY === true;
  }

  show(left: readonly Left[], started: number): void {
    const byResource = new Map<string, number>();
    for (const { target } of left)
      byResource.set(
        resourceName(target.resource),
        (byResource.get(resourceName(target.resource)) ?? 0) + 1,
      );
    const counts = [...byResource].map(([name, n]) => `${n} ${name}`).join(', ');
    const text = `waiting: ${left.length} object${left.length === 1 ? '' : 's'} left (${counts})`;
    const now = Date.now();
    if (this.tty) {
      this.out.write(`\r\x1b[K${text}, ${seconds(now - started)} of ${this.timeoutSeconds}s`);
      this.lastLine = text;
      return;
    }
    if (now - this.lastAt < TICK_MS || (text === this.lastLine && now - this.lastAt < HEARTBEAT_MS))
      return;
    this.out.write(`${text}, ${seconds(now - started)} of ${this.timeoutSeconds}s\n`);
    this.lastLine = text;
    this.lastAt = now;
  }

  end(): void {
    if (this.tty && this.lastLine !== '') this.out.write('\n');
  }
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}

/**
 * Why the operator's admission configurations stay, or undefined when uninstall removes them. They
 * are cluster-wide: removed only when everything was uninstalled (no namespace limit) and no object
 * is left, since the operator still serves other namespaces, or the objects left.
 */
export function webhooksKept(
  namespaces: readonly string[],
  objectsLeft: number,
): string | undefined {
  if (namespaces.length > 0)
    return `it serves every namespace the operator does, and only ${namespaces.join(', ')} ${namespaces.length === 1 ? 'was' : 'were'} uninstalled`;
  if (objectsLeft > 0)
    return `${objectsLeft} object${objectsLeft === 1 ? ' is' : 's are'} left, which the operator still serves`;
  return undefined;
}
