/**
 * Which namespaces, ServiceMonitors and PodMonitors a Prometheus object selects, following
 * prometheus-operator and apimachinery semantics. Pure functions: callers pass in what they listed.
 */
import type {
  LabelSelector,
  NamespaceInfo,
  NamespaceSelector,
  ObjectMeta,
  PodMonitorResource,
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
 * The namespaces whose monitors `prometheus` considers under `selector` (one of its namespace
 * selectors), sorted by name: `null`/absent means only the Prometheus object's own namespace, `{}`
 * every namespace in `namespaces`, anything else those whose labels match.
 */
function namespacesSelectedBy(
  selector: LabelSelector | null | undefined,
  prometheus: PrometheusResource,
  namespaces: readonly NamespaceInfo[],
): string[] {
  if (selector == null) return [prometheus.metadata.namespace];
  const names = namespaces
    .filter((ns) => matchesSelector(selector, ns.labels))
    .map((ns) => ns.name);
  return [...new Set(names)].sort(compareStrings);
}

/** The namespaces whose ServiceMonitors `prometheus` considers (`serviceMonitorNamespaceSelector`), sorted by name. */
export function selectedNamespaces(
  prometheus: PrometheusResource,
  namespaces: readonly NamespaceInfo[],
): string[] {
  return namespacesSelectedBy(
    prometheus.spec.serviceMonitorNamespaceSelector,
    prometheus,
    namespaces,
  );
}

/** The namespaces whose PodMonitors `prometheus` considers (`podMonitorNamespaceSelector`), sorted by name. */
export function selectedPodMonitorNamespaces(
  prometheus: PrometheusResource,
  namespaces: readonly NamespaceInfo[],
): string[] {
  return namespacesSelectedBy(prometheus.spec.podMonitorNamespaceSelector, prometheus, namespaces);
}

/** `<namespace>/<name>`, the key ServiceMonitors are ordered and reported by. */
export function monitorKey(monitor: { metadata: ObjectMeta }): string {
  return `${monitor.metadata.namespace}/${monitor.metadata.name}`;
}

/** `podMonitor/<namespace>/<name>`, the key a skipped PodMonitor is reported by (PodMonitors are ordered by {@link monitorKey}). */
export function podMonitorKey(monitor: { metadata: ObjectMeta }): string {
  return `podMonitor/${monitorKey(monitor)}`;
}

/** Those of `items` in `inScope` whose labels match `selector` (`null`/absent: none), sorted by key, first of each key kept. */
function selectObjects<T extends { metadata: ObjectMeta }>(
  selector: LabelSelector | null | undefined,
  inScope: ReadonlySet<string>,
  items: readonly T[],
): T[] {
  if (selector == null) return [];
  const byKey = new Map<string, T>();
  for (const item of items) {
    if (!inScope.has(item.metadata.namespace)) continue;
    if (!matchesSelector(selector, item.metadata.labels)) continue;
    const key = monitorKey(item);
    if (!byKey.has(key)) byKey.set(key, item);
  }
  return [...byKey.keys()].sort(compareStrings).map((key) => byKey.get(key) as T);
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
  return selectObjects(selector, new Set(selectedNamespaces(prometheus, namespaces)), monitors);
}

/**
 * The PodMonitors `prometheus` selects, by `podMonitorSelector` and `podMonitorNamespaceSelector`
 * with the same rules as {@link selectServiceMonitors}.
 */
export function selectPodMonitors(
  prometheus: PrometheusResource,
  monitors: readonly PodMonitorResource[],
  namespaces: readonly NamespaceInfo[],
): PodMonitorResource[] {
  const selector = prometheus.spec.podMonitorSelector;
  if (selector == null) return [];
  return selectObjects(
    selector,
    new Set(selectedPodMonitorNamespaces(prometheus, namespaces)),
    monitors,
  );
}

/**
 * The namespaces a ServiceMonitor or PodMonitor discovers targets in: `undefined` for `any: true`
 * (all namespaces, so the SD config carries no `namespaces` block), `matchNames` as given, or else
 * the monitor's own namespace.
 */
export function namespacesForMonitor(monitor: {
  metadata: ObjectMeta;
  spec: { namespaceSelector?: NamespaceSelector };
}): string[] | undefined {
  const selector = monitor.spec.namespaceSelector;
  if (selector?.any === true) return undefined;
  if (selector?.matchNames !== undefined && selector.matchNames.length > 0)
    return [...selector.matchNames];
  return [monitor.metadata.namespace];
}

/**
 * A label selector in apimachinery's text form (`labels.Selector.String()`), as Prometheus' role
 * selectors take it: requirements sorted by key, `k=v`, `k in (a,b)`, `k notin (a,b)` (values
 * sorted), `k`, `!k`, joined by commas; `{}` gives the empty text, which selects everything. Keys and
 * values must have been validated (they are written as they are).
 */
export function labelSelectorText(selector: LabelSelector | undefined): string {
  const requirements: Array<{ key: string; text: string }> = [];
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {}))
    requirements.push({ key, text: `${key}=${value}` });
  for (const req of selector?.matchExpressions ?? []) {
    const values = [...(req.values ?? [])].sort(compareStrings).join(',');
    switch (req.operator) {
      case 'In':
        requirements.push({ key: req.key, text: `${req.key} in (${values})` });
        break;
      case 'NotIn':
        requirements.push({ key: req.key, text: `${req.key} notin (${values})` });
        break;
      case 'Exists':
        requirements.push({ key: req.key, text: req.key });
        break;
      case 'DoesNotExist':
        requirements.push({ key: req.key, text: `!${req.key}` });
        break;
    }
  }
  // Array.prototype.sort is stable: requirements on one key keep their order.
  return requirements
    .sort((a, b) => compareStrings(a.key, b.key))
    .map((r) => r.text)
    .join(',');
}
