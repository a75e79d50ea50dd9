/**
 * PodMonitor scrape jobs, after prometheus-operator's `generatePodMonitorConfig`: one `role: pod`
 * job per `podMetricsEndpoints` entry, named `podMonitor/<ns>/<name>/<i>`, single shard.
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
import { namespacesForMonitor } from './selectors.js';
import type {
  PodMetricsEndpoint,
  PodMonitorResource,
  PrometheusResource,
  RelabelRule,
  ScrapeConfig,
} from './types.js';

const NO_PROMETHEUS: PrometheusResource = { metadata: { name: '', namespace: '' }, spec: {} };

/** The container port filter: by `port` name, else `portNumber`, else the deprecated `targetPort`; none scrapes every port. */
function portRules(ep: PodMetricsEndpoint): RelabelRule[] {
  if (ep.port !== undefined && ep.port !== '') {
    return [
      {
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_name'],
        regex: ep.port,
      },
    ];
  }
  if (typeof ep.portNumber === 'number' && ep.portNumber !== 0) {
    return [
      {
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_number'],
        regex: ep.portNumber,
      },
    ];
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
    return [
      {
        action: 'keep',
        source_labels: ['__meta_kubernetes_pod_container_port_number'],
        regex: ep.targetPort,
      },
    ];
  }
  return [];
}

/** The `endpoint` label: the port name, else the targetPort (upstream sets none for `portNumber`). */
function endpointLabel(ep: PodMetricsEndpoint): RelabelRule[] {
  if (ep.port !== undefined && ep.port !== '')
    return [{ target_label: 'endpoint', replacement: ep.port }];
  if (ep.targetPort !== undefined && ep.targetPort !== 0 && String(ep.targetPort) !== '') {
    return [{ target_label: 'endpoint', replacement: String(ep.targetPort) }];
  }
  return [];
}

/** `relabel_configs` for one endpoint, in upstream order (the running filter comes before the selector here). */
function relabelRules(monitor: PodMonitorResource, ep: PodMetricsEndpoint): RelabelRule[] {
  const spec = monitor.spec;
  const rules: RelabelRule[] = [
    { source_labels: ['job'], target_label: '__tmp_prometheus_job_name' },
  ];
  if (ep.filterRunning !== false) {
    rules.push({
      action: 'drop',
      source_labels: ['__meta_kubernetes_pod_phase'],
      regex: '(Failed|Succeeded)',
    });
  }
  if (!usesRoleSelector(spec.selectorMechanism)) rules.push(...selectorRules(spec.selector, 'pod'));
  rules.push(
    ...portRules(ep),
    { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
    { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
    { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
  );
  for (const label of spec.podTargetLabels ?? []) {
    const name = sanitizeLabelName(label);
    rules.push({
      source_labels: [`__meta_kubernetes_pod_label_${name}`],
      target_label: name,
      regex: '(.+)',
      replacement: '${1}',
    });
  }
  // `<namespace>/<name>` stays as the fallback job when the jobLabel is missing on a Pod.
  rules.push({
    target_label: 'job',
    replacement: `${monitor.metadata.namespace}/${monitor.metadata.name}`,
  });
  if (spec.jobLabel !== undefined && spec.jobLabel !== '') {
    rules.push({
      source_labels: [`__meta_kubernetes_pod_label_${sanitizeLabelName(spec.jobLabel)}`],
      target_label: 'job',
      regex: '(.+)',
      replacement: '${1}',
    });
  }
  rules.push(...endpointLabel(ep), ...userRules(ep.relabelings));
  return rules;
}

/** The URL parameters, copied so that the configuration shares nothing with its input. */
function copyParams(params: Record<string, string[]>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(params).map(([name, values]) => [name, [...values]]));
}

/** One scrape job, keys in upstream order. */
function scrapeConfig(
  prometheus: PrometheusResource,
  monitor: PodMonitorResource,
  ep: PodMetricsEndpoint,
  index: number,
): ScrapeConfig {
  const job: ScrapeConfig = {
    job_name: `podMonitor/${monitor.metadata.namespace}/${monitor.metadata.name}/${index}`,
    ...honorFields(prometheus, ep),
    kubernetes_sd_configs: [
      kubernetesSD(
        'pod',
        namespacesForMonitor(monitor),
        monitor.spec.selectorMechanism,
        monitor.spec.selector,
        ['pod'],
      ),
    ],
    ...(ep.interval !== undefined && ep.interval !== '' ? { scrape_interval: ep.interval } : {}),
    ...(ep.scrapeTimeout !== undefined && ep.scrapeTimeout !== ''
      ? { scrape_timeout: ep.scrapeTimeout }
      : {}),
    ...(ep.path !== undefined && ep.path !== '' ? { metrics_path: ep.path } : {}),
    ...(ep.params != null && Object.keys(ep.params).length > 0
      ? { params: copyParams(ep.params) }
      : {}),
    ...(ep.scheme !== undefined && ep.scheme !== '' ? { scheme: ep.scheme.toLowerCase() } : {}),
    relabel_configs: relabelRules(monitor, ep),
  };
  const metricRules = (ep.metricRelabelings ?? []).map(toRelabelRule);
  if (metricRules.length > 0) job.metric_relabel_configs = metricRules;
  return job;
}

/**
 * The scrape jobs of one PodMonitor, one per `podMetricsEndpoints` entry, exactly as rendered for
 * `prometheus`: no validation, so callers check the monitor first (`validatePodMonitor`).
 */
export function podMonitorScrapeConfigs(
  monitor: PodMonitorResource,
  prometheus: PrometheusResource = NO_PROMETHEUS,
): ScrapeConfig[] {
  return (monitor.spec.podMetricsEndpoints ?? []).map((ep, i) =>
    scrapeConfig(prometheus, monitor, ep, i),
  );
}
