/**
 * Types for the subset of prometheus-operator's `monitoring.coreos.com/v1` API that the Prometheus
 * handlers support, and for the Prometheus configuration generated from it.
 *
 * Objects arrive from the API server unchecked, so string unions here describe what is valid,
 * not what is guaranteed: `validateServiceMonitor` re-checks them at run time.
 */
import type * as Crd from './generated/monitoring.coreos.com.js';

export type { Prometheus, ServiceMonitor } from './generated/monitoring.coreos.com.js';

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
export type RelabelConfig = NonNullable<Crd.ServiceMonitorSpec['endpoints'][number]['relabelings']>[number];

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
}
type GeneratedEndpoint = Crd.ServiceMonitorSpec['endpoints'][number];

/** `ServiceMonitor.spec.namespaceSelector`: which namespaces to discover Services in. */
export interface NamespaceSelector extends NonNullable<Crd.ServiceMonitorSpec['namespaceSelector']> {
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

/** One `kubernetes_sd_configs` entry; `namespaces` is absent for `namespaceSelector.any`. */
export interface KubernetesSDConfig {
  role: 'endpoints';
  namespaces?: { names: string[] };
}

/** One generated scrape job. */
export interface ScrapeConfig {
  job_name: string;
  honor_labels: boolean;
  kubernetes_sd_configs: KubernetesSDConfig[];
  scrape_interval?: string;
  scrape_timeout?: string;
  metrics_path?: string;
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
  scrape_configs: ScrapeConfig[];
}

/** A selected ServiceMonitor left out of the configuration, and why. */
export interface SkippedMonitor {
  /** `<namespace>/<name>`. */
  monitor: string;
  problems: string[];
}

/** What `generateConfig` returns. */
export interface GeneratedConfig {
  yaml: string;
  config: PrometheusConfig;
  skipped: SkippedMonitor[];
}
