/**
 * Prometheus configuration generation from a Prometheus object and its ServiceMonitors, after
 * prometheus-operator's `pkg/prometheus/promcfg.go` (`generateServiceMonitorConfig`).
 * Pure and deterministic: no I/O, same input (in any order) gives the same bytes.
 */
import { gzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import { labelKeyProblem, labelValueProblem } from './label-values.js';
import { MAX_MONITOR_REGEX_INSTRUCTIONS, MAX_REGEX_INSTRUCTIONS, MAX_REGEX_LENGTH, regexProblem } from './regex.js';
import { estimateRegexSize, MAX_REPEAT } from './regex-size.js';
import { compareStrings, monitorKey, namespacesForMonitor, selectServiceMonitors } from './selectors.js';
import type {
  Endpoint,
  GeneratedConfig,
  GlobalConfig,
  KubernetesSDConfig,
  LabelSelector,
  NamespaceInfo,
  PrometheusConfig,
  PrometheusResource,
  RelabelConfig,
  RelabelRule,
  ScrapeConfig,
  ServiceMonitorResource,
  SkippedMonitor,
} from './types.js';

export { regexProblem } from './regex.js';

/** Used when `scrapeInterval` / `evaluationInterval` are unset. */
export const DEFAULT_INTERVAL = '30s';
/** External label naming the Prometheus object (`<ns>/<name>`). */
export const PROMETHEUS_EXTERNAL_LABEL = 'prometheus';
/** External label naming the replica; the config reloader substitutes `$(POD_NAME)`. */
export const REPLICA_EXTERNAL_LABEL = 'prometheus_replica';

/** Relabel actions Prometheus (≥ 2.41) accepts, lower-case; ServiceMonitors may use any case. */
export const RELABEL_ACTIONS: readonly string[] = [
  'replace',
  'keep',
  'drop',
  'hashmod',
  'labelmap',
  'labeldrop',
  'labelkeep',
  'lowercase',
  'uppercase',
  'keepequal',
  'dropequal',
];

const SELECTOR_OPERATORS: readonly string[] = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const DEFAULT_SEPARATOR = ';';
const DEFAULT_REPLACEMENT = '$1';
const DEFAULT_REGEX = '(.*)';
/** Prometheus' legacy (pre-UTF-8) label name rule, which the 2.x line validates against. */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** Prometheus' `relabelTarget`: a label name that may contain `$1` / `${name}` references. */
const RELABEL_TARGET = /^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$/;

// ---- Small helpers -------------------------------------------------------------------------

/** Replaces every character outside `[a-zA-Z0-9_]` with `_`, as upstream does for label names. */
export function sanitizeLabelName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_]/g, '_');
}

const DURATION = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const DURATION_UNITS_MS = [365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1].map(BigInt);
/** Go's `time.Duration` is int64 nanoseconds: Prometheus refuses longer durations ("duration out of range"), about 292 years. */
const MAX_DURATION_NS = 2n ** 63n - 1n;

/** A duration's length in milliseconds, or why it is not one Prometheus accepts. */
function readDuration(text: string): number | 'invalid' | 'out of range' {
  if (text === '0') return 0;
  if (text === '') return 'invalid';
  const match = DURATION.exec(text);
  if (match === null) return 'invalid';
  let totalMs = 0n;
  DURATION_UNITS_MS.forEach((unit, i) => {
    const amount = match[i + 1];
    if (amount !== undefined) totalMs += BigInt(amount) * unit;
  });
  // As model.ParseDuration: the sum in nanoseconds must fit an int64.
  if (totalMs * 1_000_000n > MAX_DURATION_NS) return 'out of range';
  return Number(totalMs);
}

/**
 * Parses a Prometheus duration (`15s`, `1m30s`, `500ms`, `1h`, `2d`, `1w`, `1y`, `0`) into
 * milliseconds; `undefined` when the text is not one, or is longer than Prometheus can hold
 * (about 292 years, e.g. `300y`). Units must appear largest first, as in `model.ParseDuration`.
 */
export function parseDuration(text: string): number | undefined {
  const result = readDuration(text);
  return typeof result === 'number' ? result : undefined;
}

// ---- Validation ----------------------------------------------------------------------------

/** A regex as quoted in a problem: at most 64 characters of it, so an Event never carries kilobytes. */
function quoteRegex(regex: string): string {
  return regex.length <= 64 ? regex : `${regex.slice(0, 60)}…`;
}

/**
 * The checks apimachinery's `LabelSelectorAsSelector` makes (valid keys and values, known operators,
 * values only where the operator takes them). Values end up unescaped in relabel regexes, so a
 * value such as `(` would otherwise make the whole configuration unloadable.
 */
function selectorProblems(selector: LabelSelector | null | undefined, field: string): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem !== undefined) problems.push(`${field}.matchLabels: key ${JSON.stringify(key)} is not a valid label key: ${keyProblem}`);
    const valueProblem = labelValueProblem(value);
    if (valueProblem !== undefined) problems.push(`${field}.matchLabels[${JSON.stringify(key)}]: ${JSON.stringify(value)} is not a valid label value: ${valueProblem}`);
  }
  (selector?.matchExpressions ?? []).forEach((req, i) => {
    const where = `${field}.matchExpressions[${i}]`;
    const values = req.values ?? [];
    const keyProblem = labelKeyProblem(req.key);
    if (keyProblem !== undefined) problems.push(`${where}.key: ${JSON.stringify(req.key)} is not a valid label key: ${keyProblem}`);
    values.forEach((value, j) => {
      const valueProblem = labelValueProblem(value);
      if (valueProblem !== undefined) problems.push(`${where}.values[${j}]: ${JSON.stringify(value)} is not a valid label value: ${valueProblem}`);
    });
    if (!SELECTOR_OPERATORS.includes(req.operator)) {
      problems.push(`${where}.operator: invalid operator "${String(req.operator)}" (allowed: ${SELECTOR_OPERATORS.join(', ')})`);
    } else if ((req.operator === 'In' || req.operator === 'NotIn') && values.length === 0) {
      problems.push(`${where}.values: must be non-empty for operator ${req.operator}`);
    } else if ((req.operator === 'Exists' || req.operator === 'DoesNotExist') && values.length > 0) {
      problems.push(`${where}.values: must be empty for operator ${req.operator}`);
    }
  });
  return problems;
}

/** The checks Prometheus applies when loading a relabel config (`model/relabel`). */
function relabelProblems(rc: RelabelConfig, field: string): string[] {
  const problems: string[] = [];
  const rawAction = rc.action ?? '';
  const action = rawAction === '' ? 'replace' : rawAction.toLowerCase();
  if (!RELABEL_ACTIONS.includes(action)) {
    problems.push(`${field}.action: invalid action "${rawAction}" (allowed: ${RELABEL_ACTIONS.join(', ')}, any case)`);
    return problems;
  }
  (rc.sourceLabels ?? []).forEach((label, i) => {
    if (!LABEL_NAME.test(label)) problems.push(`${field}.sourceLabels[${i}]: "${label}" is not a valid label name`);
  });
  if (rc.regex !== undefined) {
    const why = regexProblem(String(rc.regex));
    if (why !== undefined) problems.push(`${field}.regex: "${quoteRegex(String(rc.regex))}" ${why}`);
  }
  if (rc.modulus !== undefined && (!Number.isInteger(rc.modulus) || rc.modulus < 0)) {
    problems.push(`${field}.modulus: must be a non-negative integer`);
  }
  const target = rc.targetLabel ?? '';
  const replacement = rc.replacement ?? DEFAULT_REPLACEMENT;
  const separator = rc.separator ?? DEFAULT_SEPARATOR;
  const regex = rc.regex ?? '';
  const modulus = rc.modulus ?? 0;

  if (action === 'hashmod' && modulus === 0) problems.push(`${field}.modulus: required (non-zero) for action hashmod`);
  const needsTarget = ['replace', 'hashmod', 'lowercase', 'uppercase', 'keepequal', 'dropequal'];
  if (needsTarget.includes(action)) {
    if (target === '') {
      problems.push(`${field}.targetLabel: required for action ${action}`);
    } else if (action === 'hashmod' ? !LABEL_NAME.test(target) : !RELABEL_TARGET.test(target)) {
      problems.push(`${field}.targetLabel: "${target}" is invalid for action ${action}`);
    }
  }
  if (['lowercase', 'uppercase'].includes(action) && replacement !== DEFAULT_REPLACEMENT) {
    problems.push(`${field}.replacement: cannot be set for action ${action}`);
  }
  if (action === 'labelmap' && !RELABEL_TARGET.test(replacement)) {
    problems.push(`${field}.replacement: "${replacement}" is invalid for action labelmap`);
  }
  if (
    ['keepequal', 'dropequal'].includes(action) &&
    ((regex !== '' && regex !== DEFAULT_REGEX) ||
      modulus !== 0 ||
      separator !== DEFAULT_SEPARATOR ||
      replacement !== DEFAULT_REPLACEMENT)
  ) {
    problems.push(`${field}: action ${action} takes only sourceLabels and targetLabel`);
  }
  if (
    ['labeldrop', 'labelkeep'].includes(action) &&
    ((rc.sourceLabels ?? []).length > 0 ||
      target !== '' ||
      modulus !== 0 ||
      separator !== DEFAULT_SEPARATOR ||
      replacement !== DEFAULT_REPLACEMENT)
  ) {
    problems.push(`${field}: action ${action} takes only regex`);
  }
  return problems;
}

function durationProblem(value: unknown, field: string): string | undefined {
  // An empty string counts as unset, as when generating.
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') return `${field}: must be a duration string (e.g. 30s), not ${typeof value}`;
  const result = readDuration(value);
  if (result === 'invalid') return `${field}: "${value}" is not a valid duration (e.g. 30s, 1m30s, 500ms)`;
  if (result === 'out of range') return `${field}: "${value}" is out of range (Prometheus durations end at about 292y)`;
  return undefined;
}

/**
 * The estimated sizes of the regexes a monitor's endpoints put into the configuration: relabel
 * regexes and port names (written as regexes). Ones refused on their own without compiling (too
 * long, too large) are left out: they are reported by field.
 */
function monitorRegexes(endpoints: readonly Endpoint[]): number[] {
  return endpoints
    .flatMap((ep) => [
      ...[...(ep.relabelings ?? []), ...(ep.metricRelabelings ?? [])].map((rc) => rc.regex),
      ep.port,
      typeof ep.targetPort === 'string' ? ep.targetPort : undefined,
    ])
    .filter((regex): regex is string => typeof regex === 'string' && regex.length <= MAX_REGEX_LENGTH)
    .map((regex) => estimateRegexSize(regex))
    .filter((size) => size.instructions <= MAX_REGEX_INSTRUCTIONS && size.repeatProduct <= MAX_REPEAT)
    .map((size) => size.instructions);
}

function hasPort(endpoint: Endpoint): boolean {
  return (endpoint.port ?? '') !== '' || (endpoint.targetPort !== undefined && endpoint.targetPort !== '' && endpoint.targetPort !== 0);
}

/**
 * Problems that make a ServiceMonitor unusable, each prefixed with the field it concerns
 * (e.g. `spec.endpoints[0].relabelings[1].regex: ...`); empty when it is usable. Mirrors the
 * checks after which prometheus-operator drops a ServiceMonitor, plus Prometheus' own relabel
 * checks so that one bad monitor cannot make the whole configuration fail to load.
 *
 * @param defaultScrapeInterval the Prometheus' `scrapeInterval`, which an endpoint without
 *   `interval` inherits and its `scrapeTimeout` must not exceed.
 */
export function validateServiceMonitor(monitor: ServiceMonitorResource, defaultScrapeInterval = DEFAULT_INTERVAL): string[] {
  const problems = selectorProblems(monitor.spec?.selector, 'spec.selector');
  const endpoints = monitor.spec?.endpoints;
  if (!Array.isArray(endpoints) || endpoints.length === 0) {
    problems.push('spec.endpoints: at least one endpoint is required');
    return problems;
  }
  // Estimating is cheap and compiling is not: a monitor over budget is refused before any compile.
  const instructions = monitorRegexes(endpoints).reduce((sum, size) => sum + size, 0);
  if (instructions > MAX_MONITOR_REGEX_INSTRUCTIONS) {
    problems.push(
      `spec.endpoints: the regexes together would compile to about ${instructions} instructions; at most ${MAX_MONITOR_REGEX_INSTRUCTIONS} per ServiceMonitor are accepted (split it into several ServiceMonitors)`,
    );
    return problems;
  }
  endpoints.forEach((ep, i) => {
    const field = `spec.endpoints[${i}]`;
    if (!hasPort(ep)) problems.push(`${field}: one of port or targetPort is required`);
    if (typeof ep.targetPort === 'number' && (!Number.isInteger(ep.targetPort) || ep.targetPort < 0 || ep.targetPort > 65535)) {
      problems.push(`${field}.targetPort: ${ep.targetPort} is not a port number`);
    }
    if (ep.scheme !== undefined && !['http', 'https'].includes(ep.scheme.toLowerCase())) {
      problems.push(`${field}.scheme: "${ep.scheme}" must be http or https`);
    }
    const intervalProblem = durationProblem(ep.interval, `${field}.interval`);
    const timeoutProblem = durationProblem(ep.scrapeTimeout, `${field}.scrapeTimeout`);
    if (intervalProblem !== undefined) problems.push(intervalProblem);
    if (timeoutProblem !== undefined) problems.push(timeoutProblem);
    if (ep.scrapeTimeout && intervalProblem === undefined && timeoutProblem === undefined) {
      const intervalText = ep.interval || defaultScrapeInterval;
      const interval = parseDuration(intervalText);
      const timeout = parseDuration(ep.scrapeTimeout);
      if (interval !== undefined && timeout !== undefined && timeout > interval) {
        problems.push(`${field}.scrapeTimeout: ${ep.scrapeTimeout} is greater than the scrape interval ${intervalText}`);
      }
    }
    (ep.relabelings ?? []).forEach((rc, j) => problems.push(...relabelProblems(rc, `${field}.relabelings[${j}]`)));
    (ep.metricRelabelings ?? []).forEach((rc, j) => problems.push(...relabelProblems(rc, `${field}.metricRelabelings[${j}]`)));
  });
  return problems;
}

/**
 * Problems with the Prometheus object itself that would make the whole configuration invalid
 * (bad durations, `scrapeTimeout` above `scrapeInterval`); empty when there are none.
 */
export function validatePrometheus(prometheus: PrometheusResource): string[] {
  const spec = prometheus.spec;
  const problems: string[] = [];
  for (const key of ['scrapeInterval', 'scrapeTimeout', 'evaluationInterval'] as const) {
    const problem = durationProblem(spec[key], `spec.${key}`);
    if (problem !== undefined) problems.push(problem);
  }
  if (problems.length === 0 && spec.scrapeTimeout) {
    const interval = parseDuration(spec.scrapeInterval || DEFAULT_INTERVAL) ?? 0;
    if ((parseDuration(spec.scrapeTimeout) ?? 0) > interval) {
      problems.push(`spec.scrapeTimeout: ${spec.scrapeTimeout} is greater than spec.scrapeInterval`);
    }
  }
  return problems;
}

// ---- Generation ----------------------------------------------------------------------------

/** camelCase → snake_case, in upstream's key order (`generateRelabelConfig`), action lower-cased. */
function toRelabelRule(rc: RelabelConfig): RelabelRule {
  const rule: RelabelRule = {};
  if (rc.sourceLabels !== undefined && rc.sourceLabels.length > 0) rule.source_labels = [...rc.sourceLabels];
  if (rc.separator !== undefined) rule.separator = rc.separator;
  if (rc.targetLabel !== undefined && rc.targetLabel !== '') rule.target_label = rc.targetLabel;
  if (rc.regex !== undefined && rc.regex !== '') rule.regex = rc.regex;
  if (rc.modulus !== undefined && rc.modulus !== 0) rule.modulus = rc.modulus;
  if (rc.replacement !== undefined) rule.replacement = rc.replacement;
  if (rc.action !== undefined && rc.action !== '') rule.action = rc.action.toLowerCase();
  return rule;
}

function serviceLabel(key: string): string {
  return `__meta_kubernetes_service_label_${sanitizeLabelName(key)}`;
}

function serviceLabelPresent(key: string): string {
  return `__meta_kubernetes_service_labelpresent_${sanitizeLabelName(key)}`;
}

/** Rules 2–3: keep only targets of Services the ServiceMonitor's selector matches. */
function selectorRules(selector: LabelSelector | undefined): RelabelRule[] {
  const rules: RelabelRule[] = [];
  const matchLabels = selector?.matchLabels ?? {};
  for (const key of Object.keys(matchLabels).sort(compareStrings)) {
    // Values go into the regex unescaped, as upstream does.
    rules.push({ action: 'keep', source_labels: [serviceLabel(key), serviceLabelPresent(key)], regex: `(${matchLabels[key]});true` });
  }
  for (const req of selector?.matchExpressions ?? []) {
    const values = `(${(req.values ?? []).join('|')});true`;
    switch (req.operator) {
      case 'In':
        rules.push({ action: 'keep', source_labels: [serviceLabel(req.key), serviceLabelPresent(req.key)], regex: values });
        break;
      case 'NotIn':
        rules.push({ action: 'drop', source_labels: [serviceLabel(req.key), serviceLabelPresent(req.key)], regex: values });
        break;
      case 'Exists':
        rules.push({ action: 'keep', source_labels: [serviceLabelPresent(req.key)], regex: 'true' });
        break;
      case 'DoesNotExist':
        rules.push({ action: 'drop', source_labels: [serviceLabelPresent(req.key)], regex: 'true' });
        break;
    }
  }
  return rules;
}

/** Rule 4: keep only the endpoint's port. */
function portRules(ep: Endpoint): RelabelRule[] {
  if (ep.port !== undefined && ep.port !== '') {
    return [{ action: 'keep', source_labels: ['__meta_kubernetes_endpoint_port_name'], regex: ep.port }];
  }
  if (typeof ep.targetPort === 'string' && ep.targetPort !== '') {
    return [{ action: 'keep', source_labels: ['__meta_kubernetes_pod_container_port_name'], regex: ep.targetPort }];
  }
  if (typeof ep.targetPort === 'number' && ep.targetPort !== 0) {
    // A number, as upstream writes it; Prometheus reads it as the regex text.
    return [{ action: 'keep', source_labels: ['__meta_kubernetes_pod_container_port_number'], regex: ep.targetPort }];
  }
  return [];
}

/** Rules 1–16 for one endpoint, in upstream order. */
function relabelRules(monitor: ServiceMonitorResource, ep: Endpoint): RelabelRule[] {
  const spec = monitor.spec;
  const targetKindName = ['__meta_kubernetes_endpoint_address_target_kind', '__meta_kubernetes_endpoint_address_target_name'];
  const rules: RelabelRule[] = [
    { source_labels: ['job'], target_label: '__tmp_prometheus_job_name' },
    ...selectorRules(spec.selector),
    ...portRules(ep),
    { source_labels: [...targetKindName], separator: ';', regex: 'Node;(.*)', replacement: '${1}', target_label: 'node' },
    { source_labels: [...targetKindName], separator: ';', regex: 'Pod;(.*)', replacement: '${1}', target_label: 'pod' },
    { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
    { source_labels: ['__meta_kubernetes_service_name'], target_label: 'service' },
    { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
    { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
  ];
  if (ep.filterRunning !== false) {
    rules.push({ action: 'drop', source_labels: ['__meta_kubernetes_pod_phase'], regex: '(Failed|Succeeded)' });
  }
  for (const label of spec.targetLabels ?? []) {
    const name = sanitizeLabelName(label);
    rules.push({ source_labels: [`__meta_kubernetes_service_label_${name}`], target_label: name, regex: '(.+)', replacement: '${1}' });
  }
  for (const label of spec.podTargetLabels ?? []) {
    const name = sanitizeLabelName(label);
    rules.push({ source_labels: [`__meta_kubernetes_pod_label_${name}`], target_label: name, regex: '(.+)', replacement: '${1}' });
  }
  // The Service name stays as the fallback job when the jobLabel is missing on a Service.
  rules.push({ source_labels: ['__meta_kubernetes_service_name'], target_label: 'job', replacement: '${1}' });
  if (spec.jobLabel !== undefined && spec.jobLabel !== '') {
    rules.push({ source_labels: [serviceLabel(spec.jobLabel)], target_label: 'job', regex: '(.+)', replacement: '${1}' });
  }
  if (ep.port !== undefined && ep.port !== '') {
    rules.push({ target_label: 'endpoint', replacement: ep.port });
  } else if (ep.targetPort !== undefined && String(ep.targetPort) !== '') {
    rules.push({ target_label: 'endpoint', replacement: String(ep.targetPort) });
  }
  rules.push(...(ep.relabelings ?? []).map(toRelabelRule));
  // Upstream's rule 17 (sharding on `__address__` hashmod) is omitted: Konductor runs a single
  // shard, where those rules keep every target anyway.
  return rules;
}

/** One scrape job, keys in upstream order. */
function scrapeConfig(monitor: ServiceMonitorResource, ep: Endpoint, index: number): ScrapeConfig {
  const names = namespacesForMonitor(monitor);
  const sd: KubernetesSDConfig = names === undefined ? { role: 'endpoints' } : { role: 'endpoints', namespaces: { names } };
  const job: ScrapeConfig = {
    job_name: `serviceMonitor/${monitor.metadata.namespace}/${monitor.metadata.name}/${index}`,
    honor_labels: ep.honorLabels ?? false,
    kubernetes_sd_configs: [sd],
    ...(ep.interval !== undefined && ep.interval !== '' ? { scrape_interval: ep.interval } : {}),
    ...(ep.scrapeTimeout !== undefined && ep.scrapeTimeout !== '' ? { scrape_timeout: ep.scrapeTimeout } : {}),
    ...(ep.path !== undefined && ep.path !== '' ? { metrics_path: ep.path } : {}),
    ...(ep.scheme !== undefined && ep.scheme !== '' ? { scheme: ep.scheme.toLowerCase() } : {}),
    relabel_configs: relabelRules(monitor, ep),
  };
  const metricRules = (ep.metricRelabelings ?? []).map(toRelabelRule);
  if (metricRules.length > 0) job.metric_relabel_configs = metricRules;
  return job;
}

/**
 * The scrape jobs of one ServiceMonitor, one per endpoint, exactly as rendered: no validation, so
 * callers check the monitor first ({@link validateServiceMonitor}); {@link generateConfig} does.
 */
export function scrapeConfigs(monitor: ServiceMonitorResource): ScrapeConfig[] {
  return monitor.spec.endpoints.map((ep, i) => scrapeConfig(monitor, ep, i));
}

function ruleProblems(rule: RelabelRule, field: string): string[] {
  const problems: string[] = [];
  if (rule.regex !== undefined) {
    const why = regexProblem(String(rule.regex));
    if (why !== undefined) problems.push(`${field}.regex: ${JSON.stringify(quoteRegex(String(rule.regex)))} ${why}`);
  }
  (rule.source_labels ?? []).forEach((label) => {
    if (!LABEL_NAME.test(label)) problems.push(`${field}.source_labels: ${JSON.stringify(label)} is not a valid label name`);
  });
  // Prometheus checks target_label only for the actions that write it.
  const action = rule.action ?? 'replace';
  const writes = ['replace', 'lowercase', 'uppercase', 'keepequal', 'dropequal', 'hashmod'].includes(action);
  if (writes && rule.target_label !== undefined && !(action === 'hashmod' ? LABEL_NAME : RELABEL_TARGET).test(rule.target_label)) {
    problems.push(`${field}.target_label: ${JSON.stringify(rule.target_label)} is not a valid label name`);
  }
  return problems;
}

/**
 * Generated rules of the rendered jobs that Prometheus would refuse to load (regexes, label names),
 * named by job and position. Catches what reaches the output from fields that are not themselves
 * regexes or label names: a port name, a sanitised `targetLabels` entry starting with a digit. The
 * user's own relabelings, which close every job's `relabel_configs` and make up its
 * `metric_relabel_configs`, were checked field by field already and are not checked twice.
 */
function renderedProblems(monitor: ServiceMonitorResource, jobs: readonly ScrapeConfig[]): string[] {
  return jobs.flatMap((job, index) => {
    const generated = job.relabel_configs.length - (monitor.spec.endpoints[index]?.relabelings ?? []).length;
    return job.relabel_configs.slice(0, generated).flatMap((rule, i) => ruleProblems(rule, `${job.job_name}: relabel_configs[${i}]`));
  });
}

/** `external_labels`: the reserved two plus the user's, keys sorted; reserved names win. */
function externalLabels(prometheus: PrometheusResource): Record<string, string> {
  const labels = new Map<string, string>([
    [PROMETHEUS_EXTERNAL_LABEL, `${prometheus.metadata.namespace}/${prometheus.metadata.name}`],
    [REPLICA_EXTERNAL_LABEL, '$(POD_NAME)'],
  ]);
  for (const [key, value] of Object.entries(prometheus.spec.externalLabels ?? {})) {
    // Upstream logs a warning and ignores a user label that reuses a reserved name.
    if (!labels.has(key)) labels.set(key, value);
  }
  const sorted: Record<string, string> = {};
  for (const key of [...labels.keys()].sort(compareStrings)) sorted[key] = labels.get(key) as string;
  return sorted;
}

function globalConfig(prometheus: PrometheusResource): GlobalConfig {
  const spec = prometheus.spec;
  return {
    scrape_interval: spec.scrapeInterval || DEFAULT_INTERVAL,
    ...(spec.scrapeTimeout ? { scrape_timeout: spec.scrapeTimeout } : {}),
    external_labels: externalLabels(prometheus),
    evaluation_interval: spec.evaluationInterval || DEFAULT_INTERVAL,
  };
}

const FLOW_TOKEN = '__konductor_flow_';

/**
 * The configuration as Prometheus reads it, in block-style YAML. Only `source_labels` lists are written in flow style (`[a, b]`), as in the
 * reference output: their items are validated label names, which never need quoting in a flow
 * sequence. Mappings are never flow style, where an unquoted `${1}` would be a syntax error.
 * js-yaml has no per-node style, so such lists are replaced by unique plain-scalar tokens, and
 * the tokens by the flow text afterwards.
 */
export function renderYaml(config: PrometheusConfig): string {
  const flows: string[][] = [];
  // Should some input already contain the token text, fall back to block lists everywhere.
  const useFlow = !JSON.stringify(config).includes(FLOW_TOKEN);
  const tokenize = (rule: RelabelRule): RelabelRule => {
    const labels = rule.source_labels;
    if (!useFlow || labels === undefined || !labels.every((l) => LABEL_NAME.test(l))) return rule;
    flows.push(labels);
    return { ...rule, source_labels: [`${FLOW_TOKEN}${flows.length - 1}__`] };
  };
  const prepared = {
    ...config,
    scrape_configs: config.scrape_configs.map((job) => ({
      ...job,
      relabel_configs: job.relabel_configs.map(tokenize),
      ...(job.metric_relabel_configs !== undefined ? { metric_relabel_configs: job.metric_relabel_configs.map(tokenize) } : {}),
    })),
  };
  // js-yaml directly: client-node's dumpYaml is this call behind an import of its whole generated API.
  const text = yaml.dump(prepared, { noArrayIndent: true, lineWidth: -1, noRefs: true, sortKeys: false });
  // The token is the list's only item, on the line after its key.
  const pattern = new RegExp(`source_labels:\\n *- ${FLOW_TOKEN}(\\d+)__$`, 'gm');
  return text.replace(pattern, (_match, index: string) => `source_labels: [${(flows[Number(index)] ?? []).join(', ')}]`);
}

/**
 * Generates the Prometheus configuration for `prometheus` from every ServiceMonitor and Namespace
 * in the cluster (in any order): selects the ServiceMonitors (see `selectServiceMonitors`), leaves
 * out invalid ones (reported in `skipped`, never thrown), and renders one scrape job per endpoint
 * as prometheus-operator does, for a single shard.
 *
 * @throws Error when the Prometheus object itself is invalid (see {@link validatePrometheus}),
 *   since no configuration could be loaded then.
 */
export function generateConfig(
  prometheus: PrometheusResource,
  monitors: readonly ServiceMonitorResource[],
  namespaces: readonly NamespaceInfo[],
): GeneratedConfig {
  const invalid = validatePrometheus(prometheus);
  if (invalid.length > 0) {
    throw new Error(`Prometheus ${prometheus.metadata.namespace}/${prometheus.metadata.name} is invalid: ${invalid.join('; ')}`);
  }
  const defaultInterval = prometheus.spec.scrapeInterval || DEFAULT_INTERVAL;
  const skipped: SkippedMonitor[] = [];
  const jobs: ScrapeConfig[] = [];
  for (const monitor of selectServiceMonitors(prometheus, monitors, namespaces)) {
    const problems = validateServiceMonitor(monitor, defaultInterval);
    if (problems.length > 0) {
      skipped.push({ monitor: monitorKey(monitor), problems });
      continue;
    }
    const rendered = scrapeConfigs(monitor);
    // The last line of defence: whatever the checks above missed, no rule Prometheus refuses goes out.
    const unloadable = renderedProblems(monitor, rendered);
    if (unloadable.length > 0) {
      skipped.push({ monitor: monitorKey(monitor), problems: unloadable });
      continue;
    }
    jobs.push(...rendered);
  }
  const config: PrometheusConfig = { global: globalConfig(prometheus), scrape_configs: jobs };
  return { yaml: renderYaml(config), config, skipped };
}

/**
 * Gzips the configuration for the Secret key `prometheus.yaml.gz`. Node writes a zero mtime in
 * the gzip header, so equal YAML gives equal bytes and the Secret update can be skipped.
 */
export function gzipConfig(yaml: string): Buffer {
  return gzipSync(Buffer.from(yaml, 'utf8'));
}
