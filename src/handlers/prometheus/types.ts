/**
 * Types for the subset of prometheus-operator's `monitoring.coreos.com/v1` API that the Prometheus
 * handlers support, and for the Prometheus configuration generated from it.
 *
 * Objects arrive from the API server unchecked, so string unions here describe what is valid,
 * not what is guaranteed: `validateServiceMonitor` re-checks them at run time.
 */
import type * as Crd from './generated/monitoring.coreos.com.js';

export type { PodMonitor, Prometheus, ServiceMonitor } from './generated/monitoring.coreos.com.js';

/** Operators of a Kubernetes set-based label requirement. */
export type LabelSelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

/** One set-based requirement of a {@link LabelSelector}. */
export interface LabelSelectorRequirement {
  key: string;
  operator: LabelSelectorOperator;
  /** Required (non-empty) for `In`/`NotIn`, must be empty for `Exists`/`DoesNotExist`. */
  values?: string[];
}

/** A Kubernetes label selector (apimachinery `metav1.LabelSelector`). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** Which Kubernetes objects Service targets are discovered from: Endpoints (the default) or EndpointSlices. */
export type ServiceDiscoveryRole = 'Endpoints' | 'EndpointSlice';

/**
 * How a monitor's `selector` is applied: `RelabelConfig` (the default) as keep/drop relabelings,
 * `RoleSelector` as `selectors` of the Kubernetes SD config, so the API server filters.
 */
export type SelectorMechanism = 'RelabelConfig' | 'RoleSelector';

// The spec types below extend the ones generated from crds/monitoring.coreos.com.yaml (`npm run
// types`), so a CRD change that breaks them fails to compile. They repeat only the fields whose
// defaults and meaning the handlers document (the CRD has no descriptions for them yet).

/** `Prometheus.spec`, the supported subset. */
export interface PrometheusSpec extends Crd.PrometheusSpec {
  /** 1 when unset. */
  replicas?: number;
  /** `null`/absent selects no ServiceMonitor; `{}` selects all. */
  serviceMonitorSelector?: LabelSelector | null;
  /** `null`/absent: only the Prometheus object's own namespace; `{}`: all namespaces. */
  serviceMonitorNamespaceSelector?: LabelSelector | null;
  /** As `serviceMonitorSelector`, for PodMonitors. */
  podMonitorSelector?: LabelSelector | null;
  /** As `serviceMonitorNamespaceSelector`, for PodMonitors. */
  podMonitorNamespaceSelector?: LabelSelector | null;
  /** The Prometheus version deployed (`v2.42.0` when unset); decides which label names and features are valid. */
  version?: string;
  /** Forces `honor_labels: false` on every ServiceMonitor and PodMonitor job. */
  overrideHonorLabels?: boolean;
  /** Forces `honor_timestamps: false` on every ServiceMonitor and PodMonitor job. */
  overrideHonorTimestamps?: boolean;
  /** The default role of ServiceMonitor jobs; `Endpoints` when unset. */
  serviceDiscoveryRole?: ServiceDiscoveryRole;
  /** Prometheus duration, `30s` when unset. */
  scrapeInterval?: string;
  /** Prometheus duration; global `scrape_timeout`, only written when set. */
  scrapeTimeout?: string;
  /** Prometheus duration, `30s` when unset. */
  evaluationInterval?: string;
  /** Merged with the reserved `prometheus` and `prometheus_replica` labels (which win). */
  externalLabels?: Record<string, string>;
  /** `24h` when unset. */
  retention?: string;
  /** No reconciliation while true. */
  paused?: boolean;
}

/**
 * A relabelling rule as written in a ServiceMonitor (camelCase). `action` is accepted in either
 * case (`replace`, `Replace`, `REPLACE`...); the generated config always lower-cases it.
 */
export type RelabelConfig = NonNullable<
  Crd.ServiceMonitorSpec['endpoints'][number]['relabelings']
>[number];

/** One `ServiceMonitor.spec.endpoints[]` entry: one scrape job. */
export interface Endpoint extends GeneratedEndpoint {
  /** Service port name. */
  port?: string;
  /** Pod container port number or name; used only when `port` is empty. */
  targetPort?: number | string;
  /** `http` or `https` (either case). */
  scheme?: string;
  /** Drop Pods in phase Failed/Succeeded; true when unset. */
  filterRunning?: boolean;
  /** `honor_labels`; false when unset (and always false under the Prometheus' `overrideHonorLabels`). */
  honorLabels?: boolean;
  /** `honor_timestamps`, written only when set (or forced false by the Prometheus' `overrideHonorTimestamps`). */
  honorTimestamps?: boolean;
}
type GeneratedEndpoint = Crd.ServiceMonitorSpec['endpoints'][number];

/** `ServiceMonitor.spec.namespaceSelector`: which namespaces to discover Services in. */
export interface NamespaceSelector extends NonNullable<
  Crd.ServiceMonitorSpec['namespaceSelector']
> {
  /** All namespaces; wins over `matchNames`. */
  any?: boolean;
}

/**
 * `ServiceMonitor.spec`, the supported subset. The selector's operators are named: the CRD (like
 * upstream's) accepts any string, and `validateServiceMonitor` skips a monitor whose operator is
 * not one of them.
 */
export interface ServiceMonitorSpec extends Crd.ServiceMonitorSpec {
  /** Selects Services (not Pods). */
  selector: LabelSelector;
  /** Absent or empty: the ServiceMonitor's own namespace. */
  namespaceSelector?: NamespaceSelector;
  endpoints: Endpoint[];
  /** Service label whose value overrides `job`. */
  jobLabel?: string;
  /** Service labels copied onto targets. */
  targetLabels?: string[];
  /** Pod labels copied onto targets. */
  podTargetLabels?: string[];
  /** `RelabelConfig` when unset. */
  selectorMechanism?: SelectorMechanism;
  /** Overrides the Prometheus' `serviceDiscoveryRole` for this monitor's jobs. */
  serviceDiscoveryRole?: ServiceDiscoveryRole;
}

/** One `PodMonitor.spec.podMetricsEndpoints[]` entry: one scrape job. */
export interface PodMetricsEndpoint extends GeneratedPodEndpoint {
  /** Container port name; wins over `portNumber` and `targetPort`. */
  port?: string;
  /** Container port number; used only when `port` is empty. */
  portNumber?: number;
  /** Deprecated upstream: container port number or name, used only when `port` and `portNumber` are empty. */
  targetPort?: number | string;
  /** `http` or `https` (either case). */
  scheme?: string;
  /** Drop Pods in phase Failed/Succeeded; true when unset. */
  filterRunning?: boolean;
  honorLabels?: boolean;
  honorTimestamps?: boolean;
}
type GeneratedPodEndpoint = NonNullable<Crd.PodMonitorSpec['podMetricsEndpoints']>[number];

/** `PodMonitor.spec`, the supported subset. */
export interface PodMonitorSpec extends Crd.PodMonitorSpec {
  /** Selects Pods. */
  selector: LabelSelector;
  /** Absent or empty: the PodMonitor's own namespace. */
  namespaceSelector?: NamespaceSelector;
  /** Required non-empty: a PodMonitor without endpoints is reported, since it scrapes nothing. */
  podMetricsEndpoints?: PodMetricsEndpoint[];
  /** Pod label whose value overrides `job` (else `<namespace>/<name>`). */
  jobLabel?: string;
  /** Pod labels copied onto targets. */
  podTargetLabels?: string[];
  /** `RelabelConfig` when unset. */
  selectorMechanism?: SelectorMechanism;
}

/** The metadata the generator reads. */
export interface ObjectMeta {
  name: string;
  namespace: string;
  labels?: Record<string, string>;
}

/** A `Prometheus` object. */
export interface PrometheusResource {
  metadata: ObjectMeta;
  spec: PrometheusSpec;
}

/** A `ServiceMonitor` object. */
export interface ServiceMonitorResource {
  metadata: ObjectMeta;
  spec: ServiceMonitorSpec;
}

/** A `PodMonitor` object. */
export interface PodMonitorResource {
  metadata: ObjectMeta;
  spec: PodMonitorSpec;
}

/** A Namespace, reduced to what namespace selectors look at. */
export interface NamespaceInfo {
  name: string;
  labels?: Record<string, string>;
}

// ---- Generated Prometheus configuration (snake_case, as Prometheus reads it) ----

/** A rule of `relabel_configs` / `metric_relabel_configs`; key order is the order written. */
export interface RelabelRule {
  source_labels?: string[];
  separator?: string;
  target_label?: string;
  /** A number only for the `targetPort` filter, as upstream writes it. */
  regex?: string | number;
  modulus?: number;
  replacement?: string;
  action?: string;
}

/** A role selector of a Kubernetes SD config: the API server filters `role` objects by the `label` selector. */
export interface RoleSelector {
  role: 'endpoints' | 'endpointslice' | 'service' | 'pod';
  /** An apimachinery label selector in its text form (`app=web,tier in (a,b)`). */
  label: string;
}

/**
 * One `kubernetes_sd_configs` entry; `namespaces` is absent for `namespaceSelector.any`, `selectors`
 * present only for `selectorMechanism: RoleSelector`.
 */
export interface KubernetesSDConfig {
  role: 'endpoints' | 'endpointslice' | 'pod';
  namespaces?: { names: string[] };
  selectors?: RoleSelector[];
}

/** One generated scrape job. */
export interface ScrapeConfig {
  job_name: string;
  honor_labels: boolean;
  honor_timestamps?: boolean;
  kubernetes_sd_configs: KubernetesSDConfig[];
  scrape_interval?: string;
  scrape_timeout?: string;
  metrics_path?: string;
  /** URL parameters of the scrape request (PodMonitors). */
  params?: Record<string, string[]>;
  scheme?: string;
  relabel_configs: RelabelRule[];
  metric_relabel_configs?: RelabelRule[];
}

/** The `global` block. */
export interface GlobalConfig {
  scrape_interval: string;
  scrape_timeout?: string;
  external_labels: Record<string, string>;
  evaluation_interval: string;
}

/** The generated configuration document. */
export interface PrometheusConfig {
  global: GlobalConfig;
  /** Only when there are rule files. */
  rule_files?: string[];
  scrape_configs: ScrapeConfig[];
}

/** A selected ServiceMonitor or PodMonitor left out of the configuration, and why. */
export interface SkippedMonitor {
  /** `<namespace>/<name>` for a ServiceMonitor, `podMonitor/<namespace>/<name>` for a PodMonitor. */
  monitor: string;
  problems: string[];
}

/** What `generateConfig` returns. */
export interface GeneratedConfig {
  yaml: string;
  config: PrometheusConfig;
  skipped: SkippedMonitor[];
}
