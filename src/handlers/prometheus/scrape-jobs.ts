/**
 * ServiceMonitor scrape jobs, after prometheus-operator's `generateServiceMonitorConfig`: one job
 * per endpoint, discovering through Endpoints or EndpointSlices, single shard.
 */
import {
  honorFields,
  kubernetesSD,
  sanitizeLabelName,
  selectorRules,
  toRelabelRule,
  userRules,
  usesRoleSelector,
} from './job-parts.js';
import { atLeast, prometheusVersion } from './prometheus-version.js';
import { namespacesForMonitor } from './selectors.js';
import type {
  Endpoint,
  KubernetesSDConfig,
  PrometheusResource,
  RelabelRule,
  ScrapeConfig,
  ServiceMonitorResource,
} from './types.js';

type EndpointRole = Extract<KubernetesSDConfig['role'], 'endpoints' | 'endpointslice'>;

/** The prefix of a role's own meta labels: `__meta_kubernetes_endpoint_…` for `endpoints`, `__meta_kubernetes_endpointslice_…`. */
const META: Record<EndpointRole, string> = {
  endpoints: '__meta_kubernetes_endpoint',
  endpointslice: '__meta_kubernetes_endpointslice',
};

/** A Prometheus as far as a ServiceMonitor job depends on it, when rendering one without its Prometheus. */
const NO_PROMETHEUS: PrometheusResource = { metadata: { name: '', namespace: '' }, spec: {} };

/**
 * `endpointslice` when the monitor (else the Prometheus) asks for `EndpointSlice` and the version
 * deployed has it (2.21 and later; older ones fall back to `endpoints`, as upstream does).
 */
export function endpointRole(
  prometheus: PrometheusResource,
  monitor: ServiceMonitorResource,
): EndpointRole {
  const wanted = monitor.spec.serviceDiscoveryRole ?? prometheus.spec.serviceDiscoveryRole;
  if (wanted !== 'EndpointSlice') return 'endpoints';
  return atLeast(prometheusVersion(prometheus.spec), 2, 21, 0) ? 'endpointslice' : 'endpoints';
}

/** The endpoint's port filter, if it names a port: by Service port name, else by container port name or number. */
function portRules(ep: Endpoint, role: EndpointRole): RelabelRule[] {
  if (ep.port !== undefined && ep.port !== '') {
    return [{ action: 'keep', source_labels: [`${META[role]}_port_name`], regex: ep.port }];
  }
  if (typeof ep.targetPort === 'string' && ep.targetPort !== '') {
    return [
      {
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_name'],
        regex: ep.targetPort,
      },
    ];
  }
  if (typeof ep.targetPort === 'number' && ep.targetPort !== 0) {
    // A number, as upstream writes it; Prometheus reads it as the regex text.
    return [
      {
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_number'],
        regex: ep.targetPort,
      },
    ];
  }
  // Neither: every port of the selected Services is scraped.
  return [];
}

/** The `endpoint` label: the port name, else the targetPort; none when the endpoint names no port. */
function endpointLabel(ep: Endpoint): RelabelRule[] {
  if (ep.port !== undefined && ep.port !== '')
    return [{ target_label: 'endpoint', replacement: ep.port }];
  if (ep.targetPort !== undefined && ep.targetPort !== 0 && String(ep.targetPort) !== '') {
    return [{ target_label: 'endpoint', replacement: String(ep.targetPort) }];
  }
  return [];
}

/** `relabel_configs` for one endpoint, in upstream order. */
function relabelRules(
  monitor: ServiceMonitorResource,
  ep: Endpoint,
  role: EndpointRole,
): RelabelRule[] {
  const spec = monitor.spec;
  const targetKindName = [`${META[role]}_address_target_kind`, `${META[role]}_address_target_name`];
  const rules: RelabelRule[] = [
    { source_labels: ['job'], target_label: '__tmp_prometheus_job_name' },
    ...(usesRoleSelector(spec.selectorMechanism) ? [] : selectorRules(spec.selector, 'service')),
    ...portRules(ep, role),
    {
      source_labels: [...targetKindName],
      separator: ';',
      regex: 'Node;(.*)',
      replacement: '${1}',
      target_label: 'node',
    },
    {
      source_labels: [...targetKindName],
      separator: ';',
      regex: 'Pod;(.*)',
      replacement: '${1}',
      target_label: 'pod',
    },
    { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
    { source_labels: ['__meta_kubernetes_service_name'], target_label: 'service' },
    { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
    { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
  ];
  if (ep.filterRunning !== false) {
    rules.push({
      action: 'drop',
      source_labels: ['__meta_kubernetes_pod_phase'],
      regex: '(Failed|Succeeded)',
    });
  }
  for (const label of spec.targetLabels ?? []) {
    const name = sanitizeLabelName(label);
    rules.push({
      source_labels: [`__meta_kubernetes_service_label_${name}`],
      target_label: name,
      regex: '(.+)',
      replacement: '${1}',
    });
  }
  for (const label of spec.podTargetLabels ?? []) {
    const name = sanitizeLabelName(label);
    rules.push({
      source_labels: [`__meta_kubernetes_pod_label_${name}`],
      target_label: name,
      regex: '(.+)',
      replacement: '${1}',
    });
  }
  // The Service name stays as the fallback job when the jobLabel is missing on a Service.
  rules.push({
    source_labels: ['__meta_kubernetes_service_name'],
    target_label: 'job',
    replacement: '${1}',
  });
  if (spec.jobLabel !== undefined && spec.jobLabel !== '') {
    rules.push({
      source_labels: [`__meta_kubernetes_service_label_${sanitizeLabelName(spec.jobLabel)}`],
      target_label: 'job',
      regex: '(.+)',
      replacement: '${1}',
    });
  }
  rules.push(...endpointLabel(ep), ...userRules(ep.relabelings));
  // Upstream's sharding rules (hashmod on `__address__`) are omitted: Konductor runs a single
  // shard, where those rules keep every target anyway.
  return rules;
}

/** One scrape job, keys in upstream order. */
function scrapeConfig(
  prometheus: PrometheusResource,
  monitor: ServiceMonitorResource,
  ep: Endpoint,
  index: number,
): ScrapeConfig {
  const role = endpointRole(prometheus, monitor);
  const job: ScrapeConfig = {
    job_name: `serviceMonitor/${monitor.metadata.namespace}/${monitor.metadata.name}/${index}`,
    ...honorFields(prometheus, ep),
    kubernetes_sd_configs: [
      kubernetesSD(
        role,
        namespacesForMonitor(monitor),
        monitor.spec.selectorMechanism,
        monitor.spec.selector,
        [role, 'service'],
      ),
    ],
    ...(ep.interval !== undefined && ep.interval !== '' ? { scrape_interval: ep.interval } : {}),
    ...(ep.scrapeTimeout !== undefined && ep.scrapeTimeout !== ''
      ? { scrape_timeout: ep.scrapeTimeout }
      : {}),
    ...(ep.path !== undefined && ep.path !== '' ? { metrics_path: ep.path } : {}),
    ...(ep.scheme !== undefined && ep.scheme !== '' ? { scheme: ep.scheme.toLowerCase() } : {}),
    relabel_configs: relabelRules(monitor, ep, role),
  };
  const metricRules = (ep.metricRelabelings ?? []).map(toRelabelRule);
  if (metricRules.length > 0) job.metric_relabel_configs = metricRules;
  return job;
}

/**
 * The scrape jobs of one ServiceMonitor, one per endpoint, exactly as rendered for `prometheus`
 * (its overrides, discovery role and version; without it, upstream's defaults): no validation, so
 * callers check the monitor first (`validateServiceMonitor`); `generateConfig` does.
 */
export function scrapeConfigs(
  monitor: ServiceMonitorResource,
  prometheus: PrometheusResource = NO_PROMETHEUS,
): ScrapeConfig[] {
  return monitor.spec.endpoints.map((ep, i) => scrapeConfig(prometheus, monitor, ep, i));
}
