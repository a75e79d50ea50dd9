import { ApiError, type ApiClient, type Cache, type KubeObject, type Logger } from 'konductor';
import { errorMessage } from '../common/error-message.js';
import { sameJson } from '../common/same-json.js';
import {
  configKey,
  nextBindings,
  type Binding,
  type ConfigKind,
  type ConfigResourceStatus,
  type PrometheusRef,
  type Verdicts,
} from './acceptance.js';
import { MONITORING } from './inputs.js';

/** A ServiceMonitor, PodMonitor or PrometheusRule as the cache holds it. */
export type ConfigObject = KubeObject & { status?: ConfigResourceStatus };

const PLURALS: Record<ConfigKind, string> = {
  ServiceMonitor: 'servicemonitors',
  PodMonitor: 'podmonitors',
  PrometheusRule: 'prometheusrules',
};

/** The objects a render considered, of each kind (from the operator's watches). */
export type ConfigObjects = Readonly<Record<ConfigKind, readonly ConfigObject[]>>;

/** Looks an object up in the cache at write time (the render's copy may be older). */
export type CurrentObject = (
  kind: ConfigKind,
  namespace: string,
  name: string,
) => ConfigObject | undefined;

/** Reads a ServiceMonitor, PodMonitor or PrometheusRule from the operator's watches as they are now. */
export function currentIn(cache: Cache): CurrentObject {
  return (kind, namespace, name) =>
    cache.resource<ConfigObject>(MONITORING, PLURALS[kind]).get({ namespace, name });
}

/** What the writer tells the operator about writes it cannot make, once per kind. */
export type RefusedWrites = (kind: ConfigKind, message: string) => void;

/** One Prometheus's verdicts, to be written into the objects it considered. */
export interface Publication {
  client: ApiClient;
  prometheus: PrometheusRef;
  objects: ConfigObjects;
  verdicts: Verdicts;
  /** The objects as the cache holds them at write time. */
  current: CurrentObject;
  /** Told, once per kind and publication, about writes the operator may not make. */
  refused: RefusedWrites;
  logger: Logger;
}

/**
 * Writes each object's `status.bindings` where a Prometheus's verdicts change it, and nowhere else: an
 * unchanged verdict costs no request. Writes of one object run one at a time, since two
 * Prometheuses selecting it each rewrite its whole `bindings` list. The cache shows a write
 * only once its echo arrives, so until then the list as written is the one the next change builds on.
 */
export class AcceptanceWriter {
  /** The write under way per object uid: two Prometheuses' writes of one object run one after the other. */
  private readonly writing = new Map<string, Promise<unknown>>();
  /** Bindings written whose echo the cache has not shown yet, by object uid. */
  private readonly written = new Map<string, Binding[]>();

  /**
   * Brings every object in `objects` in line with `prometheus`'s `verdicts` (an object without a
   * verdict loses that Prometheus's binding). An object deleted meanwhile is skipped; a write the
   * operator is not allowed to make (403: its role lacks `<kind>/status`) is reported through
   * `refused` and the rest of that kind skipped; any other failure is thrown once every object was
   * tried, so the render is retried.
   */
  publish(publication: Publication): Promise<void> {
    return this.write(publication);
  }

  /** Forgets pending writes of objects whose uid is not in `live`. */
  retain(live: ReadonlySet<string>): void {
    for (const uid of [...this.written.keys()]) if (!live.has(uid)) this.written.delete(uid);
  }

  private async write({
    client,
    prometheus,
    objects,
    verdicts,
    current,
    refused,
    logger,
  }: Publication): Promise<void> {
    const failures: string[] = [];
    const now = new Date().toISOString();
    for (const kind of Object.keys(PLURALS) as ConfigKind[]) {
      const resource = client.resource<ConfigObject>(MONITORING, PLURALS[kind]);
      for (const seen of objects[kind]) {
        const { namespace, name, uid, generation } = seen.metadata ?? {};
        if (namespace === undefined || name === undefined || uid === undefined) continue;
        // Decided when its turn comes, on what an earlier write of the same object left.
        const decide = (): Binding[] | undefined => {
          const object = current(kind, namespace, name);
          if (object === undefined || object.metadata?.uid !== uid) return undefined;
          return nextBindings(
            this.base(uid, object),
            prometheus,
            verdicts.get(configKey(kind, namespace, name)),
            generation,
            now,
          );
        };
        // Most objects need nothing: they neither wait for nor hold up another Prometheus's writes.
        if (!this.writing.has(uid) && decide() === undefined) continue;
        try {
          await this.inTurn(uid, async () => {
            const next = decide();
            if (next === undefined) return;
            await resource.patchStatus({ namespace, name }, { bindings: next });
            this.written.set(uid, next);
          });
        } catch (error) {
          if (ApiError.isNotFound(error)) continue;
          if (error instanceof ApiError && error.status === 403) {
            refused(
              kind,
              `the operator may not write ${kind} status (${errorMessage(error)}): grant it patch on ${PLURALS[kind]}/status (deploy/20-rbac.yaml does) to see in each ${kind} whether Prometheus accepted it`,
            );
            break;
          }
          failures.push(`${kind} ${namespace}/${name}: ${errorMessage(error)}`);
        }
      }
    }
    if (failures.length === 0) return;
    logger.warn(
      { failures: failures.slice(0, 5) },
      `${failures.length} acceptance status writes failed`,
    );
    throw new Error(
      `Prometheus ${prometheus.namespace}/${prometheus.name}: ${failures.length} status writes of its ServiceMonitors, PodMonitors or PrometheusRules failed (first: ${failures[0]}); the render is retried`,
    );
  }

  /** Runs `write` after the writes of object `uid` already under way. */
  private inTurn(uid: string, write: () => Promise<void>): Promise<void> {
    const next = (this.writing.get(uid) ?? Promise.resolve()).then(write, write);
    const settled = next.catch(() => undefined);
    this.writing.set(uid, settled);
    void settled.then(() => {
      if (this.writing.get(uid) === settled) this.writing.delete(uid);
    });
    return next;
  }

  /** The bindings a change builds on: the ones written, until the cache shows them. */
  private base(uid: string, object: ConfigObject): unknown {
    const cached = object.status?.bindings;
    const pending = this.written.get(uid);
    if (pending === undefined) return cached;
    if (sameJson(pending, cached ?? [])) {
      this.written.delete(uid);
      return cached;
    }
    return pending;
  }
}
