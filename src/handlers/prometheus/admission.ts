import { AdmissionError, on, type AdmissionContext, type KubeObject } from 'konductor';
import { sameJson } from '../common/same-json.js';
import { DEFAULT_INTERVAL } from './durations.js';
import { prometheusVersion } from './prometheus-version.js';
import { selectPodMonitors, selectServiceMonitors } from './selectors.js';
import type {
  NamespaceInfo,
  PodMonitorResource,
  PrometheusResource,
  ServiceMonitorResource,
} from './types.js';
import { validatePodMonitor, validatePrometheus, validateServiceMonitor } from './validation.js';

const API = 'monitoring.coreos.com/v1';
/**
 * What a monitor is checked against at admission when no Prometheus that selects it is known: the
 * newest version (its label-name and discovery rules are the loosest) and an interval no
 * scrapeTimeout exceeds, so only what every Prometheus would refuse is refused (bad regexes, bad
 * selector values, an endpoint timeout above its own interval, oversized strings).
 */
const LOOSEST_VERSION = prometheusVersion({ version: 'v3.999.0' });
const LONGEST_INTERVAL = '1000y';

/** The Prometheus objects and namespaces the operator sees, to check a monitor against the ones that select it. */
export interface KnownPrometheuses {
  prometheuses: readonly PrometheusResource[];
  namespaces: readonly NamespaceInfo[];
}

/**
 * The problems of the first Prometheus in `known` that selects the monitor and would skip it at
 * render (its scrape interval, its version), each prefixed with that Prometheus: so that admission
 * refuses what render would only report. A Prometheus whose own spec is invalid renders nothing and
 * is not asked.
 */
function selectingProblems<M>(
  monitor: M,
  known: KnownPrometheuses | undefined,
  selects: (p: PrometheusResource, m: M) => boolean,
  validate: (m: M, interval: string, p: PrometheusResource) => string[],
): string[] {
  for (const prometheus of known?.prometheuses ?? []) {
    if (validatePrometheus(prometheus).length > 0 || !selects(prometheus, monitor)) continue;
    const problems = validate(
      monitor,
      prometheus.spec.scrapeInterval || DEFAULT_INTERVAL,
      prometheus,
    );
    const where = `${prometheus.metadata.namespace}/${prometheus.metadata.name}`;
    if (problems.length > 0)
      return problems.map(
        (problem) => `Prometheus ${where}, which selects it, would skip it: ${problem}`,
      );
  }
  return [];
}

/**
 * Why a ServiceMonitor cannot be stored, for the admission answer; empty when it can. With `known`,
 * also what a Prometheus that selects it would skip it for.
 */
export function serviceMonitorAdmissionProblems(
  monitor: ServiceMonitorResource,
  known?: KnownPrometheuses,
): string[] {
  const everywhere = validateServiceMonitor(monitor, LONGEST_INTERVAL, LOOSEST_VERSION);
  if (everywhere.length > 0) return everywhere;
  return selectingProblems(
    monitor,
    known,
    (p, m) => selectServiceMonitors(p, [m], known?.namespaces ?? []).length > 0,
    (m, interval, p) => validateServiceMonitor(m, interval, prometheusVersion(p.spec)),
  );
}

/** Why a PodMonitor cannot be stored; empty when it can. With `known`, as for ServiceMonitors. */
export function podMonitorAdmissionProblems(
  monitor: PodMonitorResource,
  known?: KnownPrometheuses,
): string[] {
  const everywhere = validatePodMonitor(monitor, LONGEST_INTERVAL, LOOSEST_VERSION);
  if (everywhere.length > 0) return everywhere;
  return selectingProblems(
    monitor,
    known,
    (p, m) => selectPodMonitors(p, [m], known?.namespaces ?? []).length > 0,
    (m, interval, p) => validatePodMonitor(m, interval, prometheusVersion(p.spec)),
  );
}

/**
 * The Prometheus objects and namespaces in the operator's cache, when it watches them (it does when
 * the Prometheus operator runs in the same process); otherwise undefined, and only what every
 * Prometheus refuses is refused.
 */
function knownPrometheuses(context: AdmissionContext): KnownPrometheuses | undefined {
  try {
    const prometheuses = context.cache
      .resource<KubeObject>(API, 'prometheuses')
      .list() as unknown as PrometheusResource[];
    const namespaces = context.cache
      .resource<KubeObject>('v1', 'namespaces')
      .list()
      .map((ns) => ({ name: ns.metadata?.name ?? '', labels: ns.metadata?.labels ?? {} }));
    return { prometheuses, namespaces };
  } catch {
    return undefined;
  }
}

/** The monitor under review, in the namespace of the request (a CREATE's body may not name it). */
function reviewed<T>(context: AdmissionContext): T {
  const body = context.body as unknown as { metadata?: Record<string, unknown> };
  return {
    ...body,
    metadata: { ...body.metadata, namespace: context.namespace, name: context.name },
  } as unknown as T;
}

/**
 * Whether an update leaves the spec as it was (labels, finalizers, annotations): such updates pass
 * even for an object stored before the webhook existed, so it can still be relabelled or deleted.
 */
function specUnchanged(context: AdmissionContext): boolean {
  return (
    context.operation === 'UPDATE' &&
    context.old !== undefined &&
    sameJson((context.old as KubeObject).spec, (context.body as KubeObject).spec)
  );
}

function refuse(kind: string, context: AdmissionContext, problems: readonly string[]): never {
  const where = context.namespace ? `${context.namespace}/${context.name}` : context.name;
  throw new AdmissionError(`${kind} ${where} is refused: ${problems.join('; ')}`, { code: 422 });
}

/**
 * Admission for the Prometheus operator's inputs: a ServiceMonitor or PodMonitor whose regexes RE2
 * would reject, whose selector values are invalid, or that Prometheus could not load is refused at
 * `kubectl apply` with a message naming the field; so is one that a Prometheus the operator knows,
 * and that selects it, would skip (a scrapeTimeout above that Prometheus's interval). Objects stored
 * before the webhook existed, or before the Prometheus that skips them, are still reported by one
 * Event per generation at render time.
 */
export class PrometheusAdmission {
  @on.validate(API, 'servicemonitors', { operations: ['CREATE', 'UPDATE'] })
  serviceMonitor(context: AdmissionContext): void {
    if (specUnchanged(context)) return;
    const problems = serviceMonitorAdmissionProblems(
      reviewed<ServiceMonitorResource>(context),
      knownPrometheuses(context),
    );
    if (problems.length > 0) refuse('ServiceMonitor', context, problems);
  }

  @on.validate(API, 'podmonitors', { operations: ['CREATE', 'UPDATE'] })
  podMonitor(context: AdmissionContext): void {
    if (specUnchanged(context)) return;
    const problems = podMonitorAdmissionProblems(
      reviewed<PodMonitorResource>(context),
      knownPrometheuses(context),
    );
    if (problems.length > 0) refuse('PodMonitor', context, problems);
  }
}
