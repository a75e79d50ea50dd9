import { events, on, type ApiClient, type Cache, type ChangeContext, type EventContext, type KubeObject, type Logger, type OwnedContext } from 'konductor';
import { errorMessage } from '../common/error-message.js';
import { sameJson } from '../common/same-json.js';
import type { ConfigKind, Verdicts } from './acceptance.js';
import { AcceptanceWriter, currentIn, type ConfigObjects } from './acceptance-writer.js';
import { DEFAULT_CONFIG_RELOADER_IMAGE, type StatefulSetOptions } from './children.js';
import { readInputs, reconcile, removeChildren, type Inputs, type PrometheusStatus, type ReconcileResult } from './reconcile.js';
import { ReportedProblems } from './reported-problems.js';
import { RuleChecks } from './rule-checks.js';
import type { PrometheusResource, PrometheusSpec } from './types.js';

const API = 'monitoring.coreos.com/v1';
/** The label every StatefulSet and config Secret of a Prometheus has: the owned watches see only those. */
const CHILD_SELECTOR = 'app.kubernetes.io/name=prometheus';
type Prometheus = PrometheusResource & KubeObject & { status?: PrometheusStatus };

/** The status to write: unchanged conditions keep their transition time, and an equal status is not written at all. */
function nextStatus(previous: PrometheusStatus | undefined, next: PrometheusStatus): PrometheusStatus | undefined {
  const conditions = next.conditions.map((condition) => {
    const before = previous?.conditions?.find((c) => c.type === condition.type);
    const same = before && before.status === condition.status && before.reason === condition.reason && before.message === condition.message;
    return same ? { ...condition, lastTransitionTime: before.lastTransitionTime } : condition;
  });
  const status = { ...next, conditions };
  return sameJson(previous, status) ? undefined : status;
}

/** Options of {@link PrometheusOperator}. */
export interface PrometheusOperatorOptions {
  /**
   * The prometheus-config-reloader image run next to every Prometheus (upstream's
   * `--prometheus-config-reloader` flag). Default: `$KONDUCTOR_PROMETHEUS_CONFIG_RELOADER_IMAGE`, else
   * `quay.io/prometheus-operator/prometheus-config-reloader:v0.76.0`.
   */
  configReloaderImage?: string;
}

/** The Prometheus with its apiVersion and kind, which its children's owner references name. */
function owner(prometheus: Prometheus): Prometheus {
  return { ...prometheus, apiVersion: API, kind: 'Prometheus' };
}

/**
 * The Prometheus operator: `Prometheus` objects get a StatefulSet, the governing Service, a Secret
 * with the configuration generated from the ServiceMonitors and PodMonitors they select, and rule
 * ConfigMaps (`prometheus-<name>-rulefiles-<i>`) with the PrometheusRules they select. A change to
 * any of those, or to namespace labels, re-renders every Prometheus; only changed bytes are written.
 *
 * Renders read those inputs from the operator's watches. `@on.cache` makes the handlers wait for
 * their initial listings, so the first render after a start sees every monitor and rule (without it
 * a resumed Prometheus could render before its ServiceMonitors are listed and write a partial config).
 */
@on.cache(API, 'servicemonitors')
@on.cache(API, 'podmonitors')
@on.cache(API, 'prometheusrules')
@on.cache('v1', 'namespaces')
export class PrometheusOperator {
  private rendering: Promise<void> | undefined;
  private again = false;
  /** Input events seen so far (ServiceMonitors, PodMonitors, PrometheusRules, Namespaces). */
  private inputChanges = 0;
  /**
   * The Prometheus objects this operator handles (its change handlers saw them). Re-renders cover only
   * these, so an operator limited to some namespaces never touches objects outside them.
   */
  private readonly known = new Map<string, { namespace: string; name: string }>();
  private readonly children: StatefulSetOptions;
  /** Problems already reported: one Event per object generation and message, not per re-render. */
  private readonly reported = new ReportedProblems();
  /** Each PrometheusRule generation's check, done once for every render of every Prometheus. */
  private readonly ruleChecks = new RuleChecks();
  /** Each ServiceMonitor's, PodMonitor's and PrometheusRule's `status.bindings`: whether each Prometheus accepted it. */
  private readonly acceptance = new AcceptanceWriter();
  /** The render under way per Prometheus uid (see {@link exclusive}). */
  private readonly renders = new Map<string, Promise<void>>();

  constructor(options: PrometheusOperatorOptions = {}) {
    this.children = {
      configReloaderImage: options.configReloaderImage || process.env.KONDUCTOR_PROMETHEUS_CONFIG_RELOADER_IMAGE || DEFAULT_CONFIG_RELOADER_IMAGE,
    };
  }

  private async apply({ body, cache, client, logger, patch }: Pick<ChangeContext<PrometheusSpec, PrometheusStatus>, 'body' | 'cache' | 'client' | 'logger' | 'patch'>): Promise<void> {
    const prometheus = owner(body as Prometheus);
    this.known.set(prometheus.metadata.uid ?? `${prometheus.metadata.namespace}/${prometheus.metadata.name}`, {
      namespace: prometheus.metadata.namespace,
      name: prometheus.metadata.name,
    });
    // Inputs come from the watches: one arriving while this render runs starts a re-render that writes
    // its status at once, and this handler's (older) status, written after it returns, would undo it.
    // So a render that saw the inputs change under it renders again before handing its status back.
    // At most 5 renders: under a steady stream of input changes the re-renders those start carry on.
    const status = await this.exclusive(prometheus.metadata.uid ?? '', async () => {
      let seen: number;
      let result: ReconcileResult;
      let inputs: Inputs;
      let renders = 0;
      do {
        seen = this.inputChanges;
        renders += 1;
        inputs = readInputs(cache);
        result = await reconcile(client, prometheus, inputs, logger, this.children, this.reported, this.ruleChecks);
      } while (seen !== this.inputChanges && renders < 5);
      await this.publish(client, cache, prometheus, inputs, result.verdicts, logger);
      return nextStatus(prometheus.status, result.status);
    });
    if (status) Object.assign(patch.status, status);
  }

  /**
   * Runs one render of a Prometheus at a time. Its handlers (create, update, owned StatefulSet) and
   * the re-renders that input events start run in different slots; two renders at once could finish
   * in the wrong order, the one that read the inputs first writing its older config last.
   */
  private exclusive<T>(uid: string, render: () => Promise<T>): Promise<T> {
    const previous = this.renders.get(uid) ?? Promise.resolve();
    const next = previous.then(render, render);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.renders.set(uid, settled);
    void settled.then(() => {
      if (this.renders.get(uid) === settled) this.renders.delete(uid);
    });
    return next;
  }

  /** One render of everything at a time; requests during a render collapse into one more render. */
  private renderAll(client: ApiClient, cache: Cache, logger: Logger): Promise<void> {
    this.inputChanges += 1;
    if (this.rendering) {
      this.again = true;
      return this.rendering;
    }
    this.rendering = (async () => {
      do {
        this.again = false;
        this.forgetGone(readInputs(cache));
        for (const [uid, { namespace, name }] of [...this.known]) {
          // Each Prometheus on its own: one that fails must not leave the others stale.
          try {
            await this.render(client, cache, uid, namespace, name, logger.child({ prometheus: `${namespace}/${name}` }));
          } catch (error) {
            const message = `re-rendering Prometheus ${namespace}/${name} failed: ${errorMessage(error)}; it is rendered again on its next change or the next ServiceMonitor, PodMonitor, PrometheusRule or Namespace change`;
            logger.error({ prometheus: `${namespace}/${name}`, err: errorMessage(error) }, message);
            const reference = { apiVersion: API, kind: 'Prometheus', metadata: { namespace, name, uid } };
            events.warn(reference, 'ReconcileFailed', message);
          }
        }
      } while (this.again);
    })().finally(() => {
      this.rendering = undefined;
    });
    return this.rendering;
  }

  /** Drops what is remembered about objects no longer in the cache. */
  private forgetGone(inputs: Inputs): void {
    const live = new Set<string>(this.known.keys());
    for (const object of [...inputs.monitors, ...inputs.podMonitors, ...inputs.rules]) if (object.metadata.uid !== undefined) live.add(object.metadata.uid);
    this.reported.retain(live);
    this.acceptance.retain(live);
  }

  /**
   * Writes `prometheus`'s verdicts into the status of the objects it selects, and takes its binding off
   * those it no longer selects. No verdicts (paused, an invalid spec, a configuration not written)
   * leaves every binding as it was: what the running Prometheus loaded has not changed.
   */
  private async publish(client: ApiClient, cache: Cache, prometheus: Prometheus, inputs: Inputs, verdicts: Verdicts | undefined, logger: Logger): Promise<void> {
    if (verdicts === undefined) return;
    const objects: ConfigObjects = { ServiceMonitor: inputs.monitors, PodMonitor: inputs.podMonitors, PrometheusRule: inputs.rules };
    const refused = (kind: ConfigKind, message: string): void => {
      // One Warning per Prometheus generation, not one per render.
      if (!this.reported.firstTime(prometheus, message)) return;
      logger.warn({ kind }, message);
      events.warn(prometheus, 'StatusNotWritten', message);
    };
    await this.acceptance.publish({ client, prometheus: prometheus.metadata, objects, verdicts, current: currentIn(cache), refused, logger });
  }

  /** Re-renders one known Prometheus as the cache holds it: reconciles it and writes a changed status. */
  private async render(client: ApiClient, cache: Cache, uid: string, namespace: string, name: string, logger: Logger): Promise<void> {
    await this.exclusive(uid, async () => {
      const found = cache.resource<Prometheus>(API, 'prometheuses').get({ namespace, name });
      if (!found || found.metadata.uid !== uid) {
        this.known.delete(uid);
        return;
      }
      if (found.metadata.deletionTimestamp) return;
      const prometheus = owner(found);
      // From the watches (a re-render lists nothing), read once this render has its turn.
      const inputs = readInputs(cache);
      const result = await reconcile(client, prometheus, inputs, logger, this.children, this.reported, this.ruleChecks);
      await this.publish(client, cache, prometheus, inputs, result.verdicts, logger);
      const status = nextStatus(prometheus.status, result.status);
      if (!status) return;
      await client.resource<Prometheus>(API, 'prometheuses').patchStatus({ namespace, name }, status);
    });
  }

  @on.create(API, 'prometheuses')
  async created(context: ChangeContext<PrometheusSpec, PrometheusStatus>): Promise<void> {
    await this.apply(context);
  }

  @on.update(API, 'prometheuses')
  async updated(context: ChangeContext<PrometheusSpec, PrometheusStatus>): Promise<void> {
    await this.apply(context);
  }

  @on.resume(API, 'prometheuses')
  async resumed(context: ChangeContext<PrometheusSpec, PrometheusStatus>): Promise<void> {
    await this.apply(context);
  }

  @on.deletion(API, 'prometheuses')
  async deleted({ body, cache, client, logger, uid }: ChangeContext<PrometheusSpec>): Promise<void> {
    const prometheus = owner(body as Prometheus);
    await removeChildren(client, cache, prometheus);
    // A verdict on nothing: its binding comes off every object that had one (after any render under
    // way, which would otherwise put it back).
    await this.exclusive(uid, () => this.publish(client, cache, prometheus, readInputs(cache), new Map(), logger));
    this.known.delete(uid);
  }

  @on.event(API, 'servicemonitors')
  async monitorChanged({ cache, client, logger }: EventContext): Promise<void> {
    await this.renderAll(client, cache, logger);
  }

  @on.event(API, 'podmonitors')
  async podMonitorChanged({ cache, client, logger }: EventContext): Promise<void> {
    await this.renderAll(client, cache, logger);
  }

  @on.event(API, 'prometheusrules')
  async ruleChanged({ cache, client, logger }: EventContext): Promise<void> {
    await this.renderAll(client, cache, logger);
  }

  @on.event('v1', 'namespaces')
  async namespaceChanged({ type, cache, client, logger }: EventContext): Promise<void> {
    // Only label changes matter, but events do not say what changed; re-rendering writes only differences.
    if (type !== 'DELETED') await this.renderAll(client, cache, logger);
  }

  // owned: a StatefulSet someone edited or deleted is put back. Config Secrets are not watched: that
  // needs list/watch on every Secret the operator may see (cluster-wide in deploy/), more than it should read.
  /**
   * A Prometheus's StatefulSet changed or was deleted by someone else: render that
   * Prometheus again, which rewrites only what differs from the wanted objects. ADDED (the initial
   * listing, or the operator's own create) needs nothing: the create and resume handlers render.
   */
  private async childChanged(context: OwnedContext<Prometheus, KubeObject>): Promise<void> {
    if (context.event === 'ADDED' || context.body.metadata.deletionTimestamp) return;
    await this.apply(context as unknown as ChangeContext<PrometheusSpec, PrometheusStatus>);
  }

  @on.owned(API, 'prometheuses', { child: ['apps/v1', 'statefulsets'], labelSelector: CHILD_SELECTOR })
  async statefulSetChanged(context: OwnedContext<Prometheus, KubeObject>): Promise<void> {
    await this.childChanged(context);
  }
}
