/**
 * Which fields of a monitoring.coreos.com/v1 object the operator keeps but does not act on.
 *
 * The CRDs (crds/monitoring.coreos.com.yaml) accept every field of prometheus-operator's API: the
 * ones the operator acts on are typed there, and each spec (and each nested object upstream extends,
 * such as ServiceMonitor endpoints) keeps all others as written. {@link SUPPORTED_FIELDS} mirrors that
 * schema, and a spec checks that the two agree; {@link ignoredFields} names what a spec sets outside it.
 */

/**
 * The fields the operator acts on, below one spec: `true` is a field acted on as a whole (whatever it
 * holds), an object lists the fields acted on in an object (every other one is ignored), and a
 * one-element array applies its shape to each item of a list.
 */
export type Supported = true | { readonly [field: string]: Supported } | readonly [Supported];

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
        rules: [{ record: true, alert: true, expr: true, for: true, keep_firing_for: true, labels: true, annotations: true }],
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

/** Unset in upstream's Go types (`omitempty`): nothing to ignore. */
function unset(value: unknown): boolean {
  return value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

/** `parent.key`, or `parent["key"]` for a key that is not a plain name (clipped, so a hostile key stays short). */
function child(parent: string, key: string): string {
  if (PLAIN_KEY.test(key)) return `${parent}.${key}`;
  const shown = key.length > 40 ? `${key.slice(0, 40)}...` : key;
  return `${parent}[${JSON.stringify(shown)}]`;
}

function walk(value: unknown, supported: Supported, path: string, harmless: Readonly<Record<string, unknown>>, out: string[]): void {
  if (supported === true) return;
  if (Array.isArray(supported)) {
    if (Array.isArray(value)) value.forEach((item, index) => walk(item, supported[0] as Supported, `${path}[${index}]`, harmless, out));
    return;
  }
  // A value of the wrong type is the schema's to refuse; nothing below it can be reported sensibly.
  if (!isObject(value)) return;
  const fields = supported as { readonly [field: string]: Supported };
  for (const [key, field] of Object.entries(value)) {
    if (unset(field)) continue;
    const at = child(path, key);
    if (Object.hasOwn(fields, key)) {
      walk(field, fields[key]!, at, harmless, out);
      continue;
    }
    const pattern = at.replace(/\[\d+\]/g, '[]');
    if (Object.hasOwn(harmless, pattern) && harmless[pattern] === field) continue;
    out.push(at);
  }
}

/**
 * The paths (`spec.enableAdminAPI`, `spec.endpoints[0].tlsConfig`) of the fields `spec` sets that the
 * operator keeps but does not act on, in the order they appear; empty when there are none. Fields
 * that are unset in upstream's sense (null, `""`, `[]`) and ignored fields set to upstream's default
 * where the operator behaves the same are not listed. Pure; `spec` is untrusted.
 */
export function ignoredFields(kind: MonitoringKind, spec: unknown): string[] {
  const out: string[] = [];
  walk(spec, SUPPORTED_FIELDS[kind], 'spec', HARMLESS[kind], out);
  return out;
}

/** The Event reason for accepted-but-ignored fields. */
export const IGNORED_FIELDS_REASON = 'IgnoredFields';

/** Characters of the path list in a message; the rest is counted, so the advice at the end always fits an Event. */
const LISTED_CHARACTERS = 600;

/** The Event message naming `paths` (from {@link ignoredFields}) and what to do about them. */
export function ignoredFieldsMessage(kind: MonitoringKind, paths: readonly string[], generation?: number): string {
  const listed: string[] = [];
  let length = 0;
  for (const path of paths) {
    if (listed.length > 0 && length + path.length + 2 > LISTED_CHARACTERS) break;
    listed.push(path);
    length += path.length + 2;
  }
  const more = paths.length - listed.length;
  const list = listed.join(', ') + (more > 0 ? ` and ${more} more` : '');
  const which = generation === undefined ? `this ${kind}` : `this ${kind} (generation ${generation})`;
  const one = paths.length === 1;
  return (
    `${which} sets ${paths.length} ${one ? 'field' : 'fields'} that Konductor keeps but does not act on: ${list}. ` +
    `${one ? 'It has' : 'They have'} no effect here; remove ${one ? 'it' : 'them'}, or use prometheus-operator if you need ${one ? 'it' : 'them'} (docs/upstream-compatibility.md lists what is supported).`
  );
}
