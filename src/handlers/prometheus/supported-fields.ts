/**
 * Which fields of a monitoring.coreos.com/v1 object the operator keeps but does not act on.
 *
 * The CRDs (crds/monitoring.coreos.com.yaml) accept every field of prometheus-operator's API: the
 * ones the operator acts on are typed there, and each spec (and each nested object upstream extends,
 * such as ServiceMonitor endpoints) keeps all others as written. {@link SUPPORTED_FIELDS} mirrors that
 * schema, and a spec checks that the two agree; {@link ignoredFields} names what a spec sets outside it.
 */

import {
  describeIgnoredFields,
  findIgnoredFields,
  type Supported,
} from '../common/ignored-fields.js';

export { IGNORED_FIELDS_REASON, type Supported } from '../common/ignored-fields.js';

/** The kinds whose specs {@link ignoredFields} checks. */
export type MonitoringKind = 'Prometheus' | 'ServiceMonitor' | 'PodMonitor' | 'PrometheusRule';

/** Per kind, the `spec` fields the operator acts on (see {@link Supported}). */
export const SUPPORTED_FIELDS: Readonly<Record<MonitoringKind, Supported>> = {
  Prometheus: {
    replicas: true,
    version: true,
    image: true,
    serviceMonitorSelector: true,
    serviceMonitorNamespaceSelector: true,
    podMonitorSelector: true,
    podMonitorNamespaceSelector: true,
    ruleSelector: true,
    ruleNamespaceSelector: true,
    overrideHonorLabels: true,
    overrideHonorTimestamps: true,
    serviceDiscoveryRole: true,
    scrapeInterval: true,
    scrapeTimeout: true,
    evaluationInterval: true,
    externalLabels: true,
    retention: true,
    paused: true,
    serviceAccountName: true,
    resources: true,
  },
  ServiceMonitor: {
    selector: true,
    namespaceSelector: true,
    jobLabel: true,
    targetLabels: true,
    podTargetLabels: true,
    selectorMechanism: true,
    serviceDiscoveryRole: true,
    endpoints: [
      {
        port: true,
        targetPort: true,
        path: true,
        scheme: true,
        interval: true,
        scrapeTimeout: true,
        honorLabels: true,
        honorTimestamps: true,
        filterRunning: true,
        relabelings: true,
        metricRelabelings: true,
      },
    ],
  },
  PodMonitor: {
    selector: true,
    namespaceSelector: true,
    jobLabel: true,
    podTargetLabels: true,
    selectorMechanism: true,
    podMetricsEndpoints: [
      {
        port: true,
        portNumber: true,
        targetPort: true,
        path: true,
        scheme: true,
        params: true,
        interval: true,
        scrapeTimeout: true,
        honorLabels: true,
        honorTimestamps: true,
        filterRunning: true,
        relabelings: true,
        metricRelabelings: true,
      },
    ],
  },
  PrometheusRule: {
    groups: [
      {
        name: true,
        interval: true,
        labels: true,
        limit: true,
        rules: [
          {
            record: true,
            alert: true,
            expr: true,
            for: true,
            keep_firing_for: true,
            labels: true,
            annotations: true,
          },
        ],
      },
    ],
  },
};

/**
 * Ignored fields set to the value upstream defaults to, which is also what this operator does: not
 * worth a warning (upstream's getting-started Prometheus says `enableAdminAPI: false`). Keyed by path
 * with list indices as `[]`.
 */
const HARMLESS: Readonly<Record<MonitoringKind, Readonly<Record<string, unknown>>>> = {
  Prometheus: { 'spec.enableAdminAPI': false },
  ServiceMonitor: {},
  PodMonitor: {},
  PrometheusRule: {},
};

/**
 * The paths (`spec.enableAdminAPI`, `spec.endpoints[0].tlsConfig`) of the fields `spec` sets that the
 * operator keeps but does not act on, in the order they appear; empty when there are none. Fields
 * that are unset in upstream's sense (null, `""`, `[]`) and ignored fields set to upstream's default
 * where the operator behaves the same are not listed. Pure; `spec` is untrusted.
 */
export function ignoredFields(kind: MonitoringKind, spec: unknown): string[] {
  return findIgnoredFields(spec, SUPPORTED_FIELDS[kind], HARMLESS[kind]);
}

/** The Event message naming `paths` (from {@link ignoredFields}), what they mean, and what to do about them. */
export function ignoredFieldsMessage(
  kind: MonitoringKind,
  paths: readonly string[],
  generation?: number,
): string {
  return describeIgnoredFields(paths, {
    kind,
    generation,
    alternative: (pronoun) => `, or use prometheus-operator if you need ${pronoun}`,
  });
}
