import type { Cache, KubeObject } from 'konductor';
import type { PrometheusRuleResource } from './rules.js';
import type { NamespaceInfo, PodMonitorResource, ServiceMonitorResource } from './types.js';

/** The monitoring group's version. */
export const MONITORING = 'monitoring.coreos.com/v1';

type ServiceMonitor = ServiceMonitorResource & KubeObject;
type PodMonitor = PodMonitorResource & KubeObject;
type PrometheusRule = PrometheusRuleResource & KubeObject;

/** Everything a render needs: the ServiceMonitors, PodMonitors, PrometheusRules and namespaces the operator serves. */
export interface Inputs {
  monitors: ServiceMonitor[];
  podMonitors: PodMonitor[];
  rules: PrometheusRule[];
  namespaces: NamespaceInfo[];
}

/** The cached objects of one kind, each with its kind and apiVersion (events and rule keys name them). */
function cached<T extends KubeObject>(
  cache: Cache,
  name: string,
  kind: string,
  apiVersion = MONITORING,
): T[] {
  return cache
    .resource<T>(apiVersion, name)
    .list()
    .map((item) => ({ ...item, kind, apiVersion }));
}

/**
 * What rendering needs, from the operator's watches (no API call): every ServiceMonitor, PodMonitor,
 * PrometheusRule and Namespace it sees. An operator limited to some namespaces (deploy/namespaced/)
 * watches, and so sees, only those namespaces' monitors and rules; a kind whose CRD is not installed
 * (PodMonitor, PrometheusRule came after the first CRD release) reads as none.
 */
export function readInputs(cache: Cache): Inputs {
  const namespaces = cache
    .resource<KubeObject>('v1', 'namespaces')
    .list()
    .map((ns) => ({ name: ns.metadata?.name ?? '', labels: ns.metadata?.labels ?? {} }));
  return {
    monitors: cached<ServiceMonitor>(cache, 'servicemonitors', 'ServiceMonitor'),
    podMonitors: cached<PodMonitor>(cache, 'podmonitors', 'PodMonitor'),
    rules: cached<PrometheusRule>(cache, 'prometheusrules', 'PrometheusRule'),
    namespaces,
  };
}
