/**
 * The I/O of a stopping operator's deletions (the rule is in `finalizer-release.ts`): it surveys the
 * objects that carry its finalizer, keeps working until those being deleted are done (or its time is
 * up), and then releases the finalizers the rule says no instance will come back for, logging each.
 */
import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import { ObjectApi } from '../api/object-api.js';
import {
  collectionPath,
  NAMESPACES,
  objectPath,
  resourceId,
  type Resource,
} from '../api/resource.js';
import { systemClock, type Clock } from '../clock/clock.js';
import { patchFinalizer } from '../processing/finalizer-step.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import { hasFinalizer } from '../state/finalizers.js';
import type { Identity } from '../state/identity.js';
import {
  awaitsDeletion,
  ownNamespaceTerminating,
  releaseVerdict,
  type ReleaseWorld,
} from './finalizer-release.js';
import { isNamespaceGlob, matchNamespace } from './namespace-patterns.js';
import type { ActiveRoute } from './route.js';

/** One collection the operator serves: a resource in one namespace, or across all (then `inScope` filters). */
export interface ServedCollection {
  resource: Resource;
  namespace?: string;
  /** For a cluster-wide watch filtered by namespace globs: whether an object's namespace is served. */
  inScope?: (namespace: string) => boolean;
  /** Only the objects this selects (a sharded replica's own). */
  labelSelector?: string;
}

export interface ShutdownDeletionsOptions {
  client: ApiClient;
  identity: Identity;
  logger: Logger;
  /** The namespace the operator runs in (`POD_NAMESPACE`); without it, rule 1 never applies. */
  ownNamespace?: string;
  /**
   * With sharding, the label selector of this replica's own objects: it finishes only their
   * deletions (the other replicas finish theirs; one without an owner would only hold up the stop).
   */
  ownObjects?: string;
  clock?: Clock;
  /** How often the objects being deleted are read again while waiting for them. Default 1 s. */
  pollMs?: number;
}

/** An object carrying the finalizer, as found by a survey. */
interface HeldEntry {
  resource: Resource;
  object: KubeObject;
  namespace?: string;
  name: string;
  deleting: boolean;
}

/** What a survey found. */
export interface Survey {
  held: HeldEntry[];
  world: ReleaseWorld;
}

/** Objects per page when listing a collection. */
const PAGE = 500;
/** Finalizer patches in flight at once when releasing. */
const RELEASE_CONCURRENCY = 8;

/** A stopping operator's deletions: survey, finish, release. */
export class ShutdownDeletions {
  private readonly clock: Clock;
  private namespacesUnreadable = false;

  constructor(private readonly options: ShutdownDeletionsOptions) {
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Keeps the operator working (the caller's watches and handlers run on) until no object awaits its
   * deletion (of its own objects, with `ownObjects`), or `budgetMs` passed. Returns the last survey, or undefined when it could not be made.
   */
  async finish(
    collections: readonly ServedCollection[],
    budgetMs: number,
  ): Promise<Survey | undefined> {
    const deadline = this.clock.now() + budgetMs;
    const labelSelector = this.options.ownObjects;
    const own = labelSelector ? collections.map((c) => ({ ...c, labelSelector })) : collections;
    let survey = await this.survey(own, budgetMs);
    let announced = false;
    for (;;) {
      if (!survey) return undefined;
      const world = survey.world;
      const awaiting = survey.held.filter((entry) => awaitsDeletion(entry, world));
      if (awaiting.length === 0) return survey;
      const left = deadline - this.clock.now();
      if (left <= 0) {
        this.options.logger.warn(
          { objects: awaiting.length },
          `stopping with ${awaiting.length} deletion(s) unfinished: ${names(awaiting)}`,
        );
        return survey;
      }
      if (!announced) {
        announced = true;
        this.options.logger.info(
          { objects: awaiting.length, budgetMs },
          `finishing ${awaiting.length} deletion(s) before stopping: ${names(awaiting)}`,
        );
      }
      await this.clock.sleep(Math.min(this.options.pollMs ?? 1_000, left));
      // A survey that fails now keeps the last one: the wait goes on until the deadline.
      survey = (await this.survey(own, Math.max(1, deadline - this.clock.now()))) ?? survey;
    }
  }

  /**
   * Takes the finalizer off every object the rule says no instance will come back for, logging each
   * (namespace/name and why); resolves with how many were released. `budgetMs` bounds the whole of it.
   * `goingForGood` runs first when the operator's own namespace is being deleted (no instance comes back).
   */
  async release(
    collections: readonly ServedCollection[],
    budgetMs: number,
    goingForGood?: () => Promise<void>,
  ): Promise<number> {
    const abort = new AbortController();
    const timer = this.clock.setTimeout(() => abort.abort(), budgetMs);
    try {
      const survey = await this.survey(collections, budgetMs, abort.signal);
      if (!survey) return 0;
      if (goingForGood && ownNamespaceTerminating(survey.world)) await goingForGood();
      const chosen = survey.held.flatMap((entry) => {
        const verdict = releaseVerdict(entry, survey.world);
        return verdict.release ? [{ entry, why: verdict.why }] : [];
      });
      let released = 0;
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < chosen.length && !abort.signal.aborted) {
          const { entry, why } = chosen[next++]!;
          if (await this.releaseOne(entry, why, abort.signal)) released += 1;
        }
      };
      // Past the budget the stop goes on; a patch still in flight ends when the client closes.
      const aborted = new Promise<void>((resolve) =>
        abort.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      await Promise.race([
        Promise.all(Array.from({ length: Math.min(RELEASE_CONCURRENCY, chosen.length) }, worker)),
        aborted,
      ]);
      if (released < chosen.length)
        this.options.logger.warn(
          { released, chosen: chosen.length },
          `released ${released} of ${chosen.length} finalizer(s) before the stop deadline`,
        );
      return released;
    } finally {
      timer.clear();
    }
  }

  /**
   * Every object carrying the finalizer in the served collections, and which of the namespaces that
   * matter (the own one, those of deleting objects) are being deleted. Undefined when the API cannot
   * be read within `budgetMs` (the stop goes on without it).
   */
  async survey(
    collections: readonly ServedCollection[],
    budgetMs: number,
    signal?: AbortSignal,
  ): Promise<Survey | undefined> {
    const options = { signal, timeoutMs: Math.max(1, budgetMs) };
    try {
      const held: HeldEntry[] = [];
      for (const collection of collections) held.push(...(await this.heldIn(collection, options)));
      const namespaces = new Set<string>();
      // The own namespace always: an operator leaving for good withdraws its webhooks even holding nothing.
      if (this.options.ownNamespace) namespaces.add(this.options.ownNamespace);
      for (const entry of held)
        if (entry.deleting && entry.namespace) namespaces.add(entry.namespace);
      const terminating = new Set<string>();
      for (const namespace of namespaces)
        if (await this.terminating(namespace, options)) terminating.add(namespace);
      return { held, world: { ownNamespace: this.options.ownNamespace, terminating } };
    } catch (error) {
      this.options.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'could not read the objects carrying the finalizer while stopping; they keep it',
      );
      return undefined;
    }
  }

  /** Whether the survey saw anything the release rule could act on. */
  static mayRelease(survey: Survey | undefined): boolean {
    if (!survey) return true;
    return (
      ownNamespaceTerminating(survey.world) ||
      survey.held.some(
        (entry) =>
          entry.deleting &&
          entry.namespace !== undefined &&
          survey.world.terminating.has(entry.namespace),
      )
    );
  }

  private async heldIn(
    collection: ServedCollection,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<HeldEntry[]> {
    const held: HeldEntry[] = [];
    let next: string | undefined;
    do {
      const query: Record<string, string> = { limit: String(PAGE) };
      if (next) query.continue = next;
      if (collection.labelSelector) query.labelSelector = collection.labelSelector;
      const page = await this.options.client.request<{
        items?: KubeObject[];
        metadata?: { continue?: string };
      }>('GET', collectionPath(collection.resource, collection.namespace), { ...options, query });
      for (const object of page.items ?? []) {
        const meta = object.metadata ?? {};
        if (!meta.name || !hasFinalizer(object, this.options.identity)) continue;
        if (
          meta.namespace !== undefined &&
          collection.inScope &&
          !collection.inScope(meta.namespace)
        )
          continue;
        const slim: KubeObject = {
          metadata: {
            name: meta.name,
            namespace: meta.namespace,
            uid: meta.uid,
            resourceVersion: meta.resourceVersion,
            finalizers: meta.finalizers,
          },
        };
        held.push({
          resource: collection.resource,
          object: slim,
          namespace: meta.namespace,
          name: meta.name,
          deleting: Boolean(meta.deletionTimestamp),
        });
      }
      next = page.metadata?.continue || undefined;
    } while (next);
    return held;
  }

  /** Whether a namespace is being deleted (or is gone); a namespace that cannot be read counts as healthy. */
  private async terminating(
    namespace: string,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<boolean> {
    try {
      const found = await this.options.client.request<KubeObject & { status?: { phase?: string } }>(
        'GET',
        objectPath(NAMESPACES, undefined, namespace),
        options,
      );
      return Boolean(found.metadata?.deletionTimestamp) || found.status?.phase === 'Terminating';
    } catch (error) {
      // Gone: its objects are being finalized. The own namespace cannot be gone while the operator runs in it
      // (a wrong POD_NAMESPACE, rather), so that one counts as healthy.
      if (error instanceof ApiError && error.status === 404)
        return namespace !== this.options.ownNamespace;
      if (error instanceof ApiError && error.status === 403 && !this.namespacesUnreadable) {
        this.namespacesUnreadable = true;
        this.options.logger.warn(
          { namespace },
          `cannot read namespace ${namespace} (403): without 'get' on namespaces a stopping operator cannot tell a namespace being deleted, and keeps every finalizer; grant it in the operator's ClusterRole`,
        );
        return false;
      }
      if (error instanceof ApiError && error.status === 403) return false;
      throw error;
    }
  }

  private async releaseOne(entry: HeldEntry, why: string, signal: AbortSignal): Promise<boolean> {
    const where = entry.namespace ? `${entry.namespace}/${entry.name}` : entry.name;
    const api = new ObjectApi(this.options.client, entry.resource);
    try {
      await patchFinalizer(
        api,
        entry.object,
        'remove',
        (written) => written,
        this.options.identity,
      );
      this.options.logger.warn(
        { namespace: entry.namespace, name: entry.name, resource: resourceId(entry.resource) },
        `released the finalizer of ${where}: ${why}`,
      );
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return true; // gone already: nothing holds it
      if (!signal.aborted) {
        this.options.logger.error(
          {
            namespace: entry.namespace,
            name: entry.name,
            err: error instanceof Error ? error.message : String(error),
          },
          `could not release the finalizer of ${where}; remove ${this.options.identity.finalizer} from it by hand (or run konductor disconnect)`,
        );
      }
      return false;
    }
  }
}

/** The first few `namespace/name`s of a list, for a log line. */
function names(entries: readonly HeldEntry[]): string {
  const shown = entries
    .slice(0, 5)
    .map((entry) => (entry.namespace ? `${entry.namespace}/${entry.name}` : entry.name));
  return entries.length > 5
    ? `${shown.join(', ')} and ${entries.length - 5} more`
    : shown.join(', ');
}

/** The collections an operator's routes watch, for the deletions a stop finishes or releases. */
export function servedCollections(
  routes: ReadonlyMap<string, ActiveRoute>,
  namespaces: readonly string[] | undefined,
): ServedCollection[] {
  const patterns = [...new Set(namespaces ?? [])];
  const inScope = patterns.some(isNamespaceGlob)
    ? (namespace: string) => patterns.some((pattern) => matchNamespace(pattern, namespace))
    : undefined;
  return [...routes.entries()].map(([key, active]) => {
    const namespace = (JSON.parse(key) as [string, string])[1];
    return { resource: active.route.resource, namespace: namespace || undefined, inScope };
  });
}

/** The namespace the operator runs in, as the Deployment passes it (`POD_NAMESPACE`); unset outside a cluster. */
export function ownNamespace(): string | undefined {
  return process.env.POD_NAMESPACE || undefined;
}
