import {
  events,
  kinds,
  on,
  watch,
  type ApiClient,
  type Cache,
  type KubeObject,
  type Logger,
  type ObjectKey,
  type ReconcileContext,
} from 'konductor';
import { sameJson } from '../common/same-json.js';
import type { ConfigKind, Verdicts } from './acceptance.js';
import {
  PodMonitor,
  Prometheus as PrometheusKind,
  PrometheusRule,
  ServiceMonitor,
} from './generated/monitoring.coreos.com.js';
import { AcceptanceWriter, currentIn, type ConfigObjects } from './acceptance-writer.js';
import { DEFAULT_CONFIG_RELOADER_IMAGE, type StatefulSetOptions } from './children.js';
import {
  readInputs,
  reconcile,
  removeChildren,
  type Inputs,
  type PrometheusStatus,
} from './reconcile.js';
import { ReportedProblems } from './reported-problems.js';
import { RuleChecks } from './rule-checks.js';
import type { PrometheusResource } from './types.js';

const API = 'monitoring.coreos.com/v1';
/** The label every StatefulSet and config Secret of a Prometheus has: the owned watches see only those. */
const CHILD_SELECTOR = 'app.kubernetes.io/name=prometheus';
type Prometheus = PrometheusResource & KubeObject & { status?: PrometheusStatus };

/** The status to write: unchanged conditions keep their transition time, and an equal status is not written at all. */
function nextStatus(
  previous: PrometheusStatus | undefined,
  next: PrometheusStatus,
): PrometheusStatus | undefined {
  const conditions = next.conditions.map((condition) => {
    const before = previous?.conditions?.find((c) => c.type === condition.type);
    const same =
      before &&
      before.status === condition.status &&
      before.reason === condition.reason &&
      before.message === condition.message;
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

/** Every Prometheus this operator handles: a change to any input may change any of their configurations. */
function everyPrometheus(_input: unknown, { cache }: { cache: Cache }): ObjectKey[] {
  return cache
    .resource<Prometheus>(API, 'prometheuses')
    .list()
    .map((prometheus) => ({
      namespace: prometheus.metadata.namespace,
      name: prometheus.metadata.name,
    }));
}

/**
 * The Prometheus operator: `Prometheus` objects get a StatefulSet, the governing Service, a Secret
 * with the configuration generated from the ServiceMonitors and PodMonitors they select, and rule
 * ConfigMaps (`prometheus-<name>-rulefiles-<i>`) with the PrometheusRules they select. One reconcile
 * per Prometheus, run when it changes, its StatefulSet changes (someone edited or deleted it: it is
 * put back), or any ServiceMonitor, PodMonitor, PrometheusRule or Namespace changes; only changed
 * bytes are written.
 *
 * Renders read those inputs from the operator's watches. `@on.cache` makes the handlers wait for
 * their initial listings, so the first render after a start sees every monitor and rule (without it
 * a resumed Prometheus could render before its ServiceMonitors are listed and write a partial config).
 * Config Secrets are not owned: watching them needs list/watch on every Secret the operator may see
 * (cluster-wide in deploy/), more than it should read.
 */
@on.cache(API, 'servicemonitors')
@on.cache(API, 'podmonitors')
@on.cache(API, 'prometheusrules')
@on.cache('v1', 'namespaces')
export class PrometheusOperator {
  private readonly children: StatefulSetOptions;
  /** Problems already reported: one Event per object generation and message, not per re-render. */
  private readonly reported = new ReportedProblems();
  /** Each PrometheusRule generation's check, done once for every render of every Prometheus. */
  private readonly ruleChecks = new RuleChecks();
  /** Each ServiceMonitor's, PodMonitor's and PrometheusRule's `status.bindings`: whether each Prometheus accepted it. */
  private readonly acceptance = new AcceptanceWriter();

  constructor(options: PrometheusOperatorOptions = {}) {
    this.children = {
      configReloaderImage:
        options.configReloaderImage ||
        process.env.KONDUCTOR_PROMETHEUS_CONFIG_RELOADER_IMAGE ||
        DEFAULT_CONFIG_RELOADER_IMAGE,
    };
  }

  @on.reconcile(PrometheusKind, {
    owns: [{ kind: kinds.StatefulSet, labelSelector: CHILD_SELECTOR }],
    watches: [
      watch(ServiceMonitor, everyPrometheus),
      watch(PodMonitor, everyPrometheus),
      watch(PrometheusRule, everyPrometheus),
      watch(kinds.Namespace, everyPrometheus),
    ],
    // Upstream's Prometheus status has no observedGeneration of its own; its conditions say what they saw.
    observedGeneration: false,
  })
  async reconcile({
    body,
    cache,
    client,
    logger,
    patch,
    deleting,
  }: ReconcileContext<PrometheusKind>): Promise<void> {
    const prometheus = owner(body as unknown as Prometheus);
    const inputs = readInputs(cache);
    this.forgetGone(cache, inputs);
    if (deleting) {
      await removeChildren(client, cache, prometheus);
      // A verdict on nothing: its binding comes off every object that had one.
      await this.publish(client, cache, prometheus, inputs, new Map(), logger);
      return;
    }
    const result = await reconcile(
      client,
      prometheus,
      inputs,
      logger,
      this.children,
      this.reported,
      this.ruleChecks,
    );
    await this.publish(client, cache, prometheus, inputs, result.verdicts, logger);
    const status = nextStatus(prometheus.status, result.status);
    if (status) Object.assign(patch.status, status);
  }

  /** Drops what is remembered about objects no longer in the cache. */
  private forgetGone(cache: Cache, inputs: Inputs): void {
    const live = new Set<string>();
    for (const object of [
      ...cache.resource<Prometheus>(API, 'prometheuses').list(),
      ...inputs.monitors,
      ...inputs.podMonitors,
      ...inputs.rules,
    ]) {
      if (object.metadata.uid !== undefined) live.add(object.metadata.uid);
    }
    this.reported.retain(live);
    this.acceptance.retain(live);
  }

  /**
   * Writes `prometheus`'s verdicts into the status of the objects it selects, and takes its binding off
   * those it no longer selects. No verdicts (paused, an invalid spec, a configuration not written)
   * leaves every binding as it was: what the running Prometheus loaded has not changed.
   */
  private async publish(
    client: ApiClient,
    cache: Cache,
    prometheus: Prometheus,
    inputs: Inputs,
    verdicts: Verdicts | undefined,
    logger: Logger,
  ): Promise<void> {
    if (verdicts === undefined) return;
    const objects: ConfigObjects = {
      ServiceMonitor: inputs.monitors,
      PodMonitor: inputs.podMonitors,
      PrometheusRule: inputs.rules,
    };
    const refused = (kind: ConfigKind, message: string): void => {
      // One Warning per Prometheus generation, not one per render.
      if (!this.reported.firstTime(prometheus, message)) return;
      logger.warn({ kind }, message);
      events.warn(prometheus, 'StatusNotWritten', message);
    };
    await this.acceptance.publish({
      client,
      prometheus: prometheus.metadata,
      objects,
      verdicts,
      current: currentIn(cache),
      refused,
      logger,
    });
  }
}
