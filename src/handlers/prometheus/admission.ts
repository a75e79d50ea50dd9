import { AdmissionError, on, type AdmissionContext, type KubeObject } from 'konductor';
import { sameJson } from '../common/same-json.js';
import { prometheusVersion } from './prometheus-version.js';
import type { PodMonitorResource, ServiceMonitorResource } from './types.js';
import { validatePodMonitor, validateServiceMonitor } from './validation.js';

const API = 'monitoring.coreos.com/v1';
/**
 * What a monitor is checked against at admission, when no Prometheus is known yet: the newest
 * version (its label-name and discovery rules are the loosest) and an interval no scrapeTimeout
 * exceeds. Only what every Prometheus would refuse is refused (bad regexes, bad selector values,
 * an endpoint timeout above its own interval); what depends on one Prometheus stays a render-time Event.
 */
const LOOSEST_VERSION = prometheusVersion({ version: 'v3.999.0' });
const LONGEST_INTERVAL = '1000y';

/** Why a ServiceMonitor cannot be stored, for the admission answer; empty when it can. */
export function serviceMonitorAdmissionProblems(monitor: ServiceMonitorResource): string[] {
  return validateServiceMonitor(monitor, LONGEST_INTERVAL, LOOSEST_VERSION);
}

/** Why a PodMonitor cannot be stored; empty when it can. */
export function podMonitorAdmissionProblems(monitor: PodMonitorResource): string[] {
  return validatePodMonitor(monitor, LONGEST_INTERVAL, LOOSEST_VERSION);
}

/**
 * Whether an update leaves the spec as it was (labels, finalizers, annotations): such updates pass
 * even for an object stored before the webhook existed, so it can still be relabelled or deleted.
 */
function specUnchanged(context: AdmissionContext): boolean {
  return context.operation === 'UPDATE' && context.old !== undefined && sameJson((context.old as KubeObject).spec, (context.body as KubeObject).spec);
}

function refuse(kind: string, context: AdmissionContext, problems: readonly string[]): never {
  const where = context.namespace ? `${context.namespace}/${context.name}` : context.name;
  throw new AdmissionError(`${kind} ${where} is refused: ${problems.join('; ')}`, { code: 422 });
}

/**
 * Admission for the Prometheus operator's inputs: a ServiceMonitor or PodMonitor whose regexes RE2
 * would reject, whose selector values are invalid, or that Prometheus could not load is refused at
 * `kubectl apply` with a message naming the field. Objects stored before the webhook existed are
 * still reported by Events at render time.
 */
export class PrometheusAdmission {
  @on.validate(API, 'servicemonitors', { operations: ['CREATE', 'UPDATE'] })
  serviceMonitor(context: AdmissionContext): void {
    if (specUnchanged(context)) return;
    const problems = serviceMonitorAdmissionProblems(context.body as unknown as ServiceMonitorResource);
    if (problems.length > 0) refuse('ServiceMonitor', context, problems);
  }

  @on.validate(API, 'podmonitors', { operations: ['CREATE', 'UPDATE'] })
  podMonitor(context: AdmissionContext): void {
    if (specUnchanged(context)) return;
    const problems = podMonitorAdmissionProblems(context.body as unknown as PodMonitorResource);
    if (problems.length > 0) refuse('PodMonitor', context, problems);
  }
}
