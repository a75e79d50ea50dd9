/**
 * Which namespaces and ServiceMonitors a Prometheus object selects, following prometheus-operator
 * and apimachinery semantics. Pure functions: callers pass in what they listed.
 */
import type {
  LabelSelector,
  NamespaceInfo,
  PrometheusResource,
  ServiceMonitorResource,
} from './types.js';

/**
 * Code-unit order, like Go's string comparison; `localeCompare` would depend on the locale and
 * make the generated configuration differ between machines.
 */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Whether `labels` satisfy `selector`, as apimachinery's `LabelSelectorAsSelector` decides:
 * a `null`/absent selector matches nothing, `{}` matches everything, and `matchLabels` and every
 * `matchExpressions` entry must all hold. An invalid requirement (unknown operator, `In`/`NotIn`
 * without values, `Exists`/`DoesNotExist` with values) makes the selector match nothing, since
 * apimachinery refuses to build such a selector at all.
 */
export function matchesSelector(
  selector: LabelSelector | null | undefined,
  labels: Record<string, string> | null | undefined,
): boolean {
  if (selector == null) return false;
  const have = labels ?? {};
  const has = (key: string): boolean => Object.hasOwn(have, key);

  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!has(key) || have[key] !== value) return false;
  }
  for (const req of selector.matchExpressions ?? []) {
    const values = req.values ?? [];
    switch (req.operator) {
      case 'In':
        if (values.length === 0) return false;
        if (!has(req.key) || !values.includes(have[req.key] ?? '')) return false;
        break;
      case 'NotIn':
        if (values.length === 0) return false;
        // An absent label is "not in" any set, as in apimachinery.
        if (has(req.key) && values.includes(have[req.key] ?? '')) return false;
        break;
      case 'Exists':
        if (values.length > 0 || !has(req.key)) return false;
        break;
      case 'DoesNotExist':
        if (values.length > 0 || has(req.key)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/**
 * The namespaces whose ServiceMonitors `prometheus` considers, sorted by name:
 * a `null`/absent `serviceMonitorNamespaceSelector` means only the Prometheus object's own
 * namespace, `{}` means every namespace in `namespaces`, anything else those whose labels match.
 */
export function selectedNamespaces(prometheus: PrometheusResource, namespaces: readonly NamespaceInfo[]): string[] {
  const selector = prometheus.spec.serviceMonitorNamespaceSelector;
  if (selector == null) return [prometheus.metadata.namespace];
  const names = namespaces.filter((ns) => matchesSelector(selector, ns.labels)).map((ns) => ns.name);
  return [...new Set(names)].sort(compareStrings);
}

/** `<namespace>/<name>`, the key ServiceMonitors are ordered and reported by. */
export function monitorKey(monitor: ServiceMonitorResource): string {
  return `${monitor.metadata.namespace}/${monitor.metadata.name}`;
}

/**
 * The ServiceMonitors `prometheus` selects: those in {@link selectedNamespaces} whose labels match
 * `serviceMonitorSelector` (`null`/absent selects none), sorted by `<namespace>/<name>`.
 * A repeated key keeps its first occurrence.
 */
export function selectServiceMonitors(
  prometheus: PrometheusResource,
  monitors: readonly ServiceMonitorResource[],
  namespaces: readonly NamespaceInfo[],
): ServiceMonitorResource[] {
  const selector = prometheus.spec.serviceMonitorSelector;
  if (selector == null) return [];
  const inScope = new Set(selectedNamespaces(prometheus, namespaces));
  const byKey = new Map<string, ServiceMonitorResource>();
  for (const monitor of monitors) {
    if (!inScope.has(monitor.metadata.namespace)) continue;
    if (!matchesSelector(selector, monitor.metadata.labels)) continue;
    const key = monitorKey(monitor);
    if (!byKey.has(key)) byKey.set(key, monitor);
  }
  return [...byKey.keys()].sort(compareStrings).map((key) => byKey.get(key) as ServiceMonitorResource);
}

/**
 * The namespaces a ServiceMonitor discovers Services in: `undefined` for `any: true` (all
 * namespaces, so the SD config carries no `namespaces` block), `matchNames` as given, or else the
 * ServiceMonitor's own namespace.
 */
export function namespacesForMonitor(monitor: ServiceMonitorResource): string[] | undefined {
  const selector = monitor.spec.namespaceSelector;
  if (selector?.any === true) return undefined;
  if (selector?.matchNames !== undefined && selector.matchNames.length > 0) return [...selector.matchNames];
  return [monitor.metadata.namespace];
}
