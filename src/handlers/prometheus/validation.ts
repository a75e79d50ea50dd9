/**
 * Whether a Prometheus object, a ServiceMonitor or a PodMonitor can be rendered: each problem is
 * prefixed with the field it concerns (`spec.endpoints[0].relabelings[1].regex: ...`). Mirrors the
 * checks after which prometheus-operator drops a monitor, plus Prometheus' own load-time checks, so
 * that one bad object never makes the whole configuration fail to load.
 */
import { DEFAULT_INTERVAL, durationProblem, parseDuration } from './durations.js';
import { externalLabelProblems } from './external-labels.js';
import { labelKeyProblem, labelValueProblem } from './label-values.js';
import {
  atLeast,
  prometheusVersion,
  versionProblem,
  type PrometheusVersion,
} from './prometheus-version.js';
import {
  MAX_MONITOR_REGEX_INSTRUCTIONS,
  MAX_REGEX_INSTRUCTIONS,
  MAX_REGEX_LENGTH,
} from './regex.js';
import { estimateRegexSize, MAX_REPEAT } from './regex-size.js';
import { monitorSizeProblems } from './monitor-limits.js';
import { relabelProblems } from './relabel-checks.js';
import type {
  LabelSelector,
  PodMonitorResource,
  PrometheusResource,
  RelabelConfig,
  ServiceMonitorResource,
} from './types.js';

const SELECTOR_OPERATORS: readonly string[] = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const DISCOVERY_ROLES: readonly string[] = ['Endpoints', 'EndpointSlice'];
const SELECTOR_MECHANISMS: readonly string[] = ['RelabelConfig', 'RoleSelector'];

/**
 * The checks apimachinery's `LabelSelectorAsSelector` makes (valid keys and values, known operators,
 * values only where the operator takes them). Values end up unescaped in relabel regexes and role
 * selectors, so a value such as `(` would otherwise make the whole configuration unloadable.
 */
function selectorProblems(selector: LabelSelector | null | undefined, field: string): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem !== undefined)
      problems.push(
        `${field}.matchLabels: key ${JSON.stringify(key)} is not a valid label key: ${keyProblem}`,
      );
    const valueProblem = labelValueProblem(value);
    if (valueProblem !== undefined)
      problems.push(
        `${field}.matchLabels[${JSON.stringify(key)}]: ${JSON.stringify(value)} is not a valid label value: ${valueProblem}`,
      );
  }
  (selector?.matchExpressions ?? []).forEach((req, i) => {
    const where = `${field}.matchExpressions[${i}]`;
    const values = req.values ?? [];
    const keyProblem = labelKeyProblem(req.key);
    if (keyProblem !== undefined)
      problems.push(
        `${where}.key: ${JSON.stringify(req.key)} is not a valid label key: ${keyProblem}`,
      );
    values.forEach((value, j) => {
      const valueProblem = labelValueProblem(value);
      if (valueProblem !== undefined)
        problems.push(
          `${where}.values[${j}]: ${JSON.stringify(value)} is not a valid label value: ${valueProblem}`,
        );
    });
    if (!SELECTOR_OPERATORS.includes(req.operator)) {
      problems.push(
        `${where}.operator: invalid operator "${String(req.operator)}" (allowed: ${SELECTOR_OPERATORS.join(', ')})`,
      );
    } else if ((req.operator === 'In' || req.operator === 'NotIn') && values.length === 0) {
      problems.push(`${where}.values: must be non-empty for operator ${req.operator}`);
    } else if (
      (req.operator === 'Exists' || req.operator === 'DoesNotExist') &&
      values.length > 0
    ) {
      problems.push(`${where}.values: must be empty for operator ${req.operator}`);
    }
  });
  return problems;
}

/** What ServiceMonitor and PodMonitor endpoints have in common. */
interface AnyEndpoint {
  targetPort?: number | string;
  scheme?: string;
  interval?: string;
  scrapeTimeout?: string;
  honorLabels?: boolean;
  honorTimestamps?: boolean;
  relabelings?: RelabelConfig[];
  metricRelabelings?: RelabelConfig[];
}

/**
 * The estimated sizes of the regexes a monitor's endpoints put into the configuration: relabel
 * regexes and port names (written as regexes). Ones refused on their own without compiling (too
 * long, too large) are left out: they are reported by field.
 */
function monitorRegexes(endpoints: ReadonlyArray<AnyEndpoint & { port?: string }>): number[] {
  return endpoints
    .flatMap((ep) => [
      ...[...(ep.relabelings ?? []), ...(ep.metricRelabelings ?? [])].map((rc) => rc.regex),
      ep.port,
      typeof ep.targetPort === 'string' ? ep.targetPort : undefined,
    ])
    .filter(
      (regex): regex is string => typeof regex === 'string' && regex.length <= MAX_REGEX_LENGTH,
    )
    .map((regex) => estimateRegexSize(regex))
    .filter(
      (size) => size.instructions <= MAX_REGEX_INSTRUCTIONS && size.repeatProduct <= MAX_REPEAT,
    )
    .map((size) => size.instructions);
}

function portNumberProblem(value: unknown, field: string): string | undefined {
  if (typeof value !== 'number') return undefined;
  return Number.isInteger(value) && value >= 0 && value <= 65535
    ? undefined
    : `${field}: ${value} is not a port number`;
}

/** The checks every endpoint gets: port number, scheme, durations, honor flags, relabelings. */
function endpointProblems(ep: AnyEndpoint, field: string, defaultScrapeInterval: string): string[] {
  const problems: string[] = [];
  const targetPortProblem = portNumberProblem(ep.targetPort, `${field}.targetPort`);
  if (targetPortProblem !== undefined) problems.push(targetPortProblem);
  if (
    ep.scheme !== undefined &&
    (typeof ep.scheme !== 'string' || !['http', 'https'].includes(ep.scheme.toLowerCase()))
  ) {
    problems.push(`${field}.scheme: "${String(ep.scheme)}" must be http or https`);
  }
  for (const flag of ['honorLabels', 'honorTimestamps'] as const) {
    if (ep[flag] != null && typeof ep[flag] !== 'boolean')
      problems.push(`${field}.${flag}: must be true or false`);
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
      problems.push(
        `${field}.scrapeTimeout: ${ep.scrapeTimeout} is greater than the scrape interval ${intervalText}`,
      );
    }
  }
  (ep.relabelings ?? []).forEach((rc, j) =>
    problems.push(...relabelProblems(rc, `${field}.relabelings[${j}]`)),
  );
  (ep.metricRelabelings ?? []).forEach((rc, j) =>
    problems.push(...relabelProblems(rc, `${field}.metricRelabelings[${j}]`)),
  );
  return problems;
}

/** `selectorMechanism` must be known, and `RoleSelector` needs Prometheus 2.17 or later. */
function mechanismProblems(mechanism: unknown, version: PrometheusVersion): string[] {
  if (mechanism === undefined) return [];
  if (typeof mechanism !== 'string' || !SELECTOR_MECHANISMS.includes(mechanism)) {
    return [
      `spec.selectorMechanism: "${String(mechanism)}" must be ${SELECTOR_MECHANISMS.join(' or ')}`,
    ];
  }
  if (mechanism === 'RoleSelector' && !atLeast(version, 2, 17, 0)) {
    return ['spec.selectorMechanism: RoleSelector needs Prometheus 2.17.0 or later'];
  }
  return [];
}

function roleProblem(role: unknown, field: string): string[] {
  if (role === undefined || (typeof role === 'string' && DISCOVERY_ROLES.includes(role))) return [];
  return [`${field}: "${String(role)}" must be ${DISCOVERY_ROLES.join(' or ')}`];
}

/** Refuses the monitor before any compile when its regexes together are over the budget. */
function budgetProblem(
  endpoints: ReadonlyArray<AnyEndpoint & { port?: string }>,
  field: string,
  kind: string,
): string | undefined {
  const instructions = monitorRegexes(endpoints).reduce((sum, size) => sum + size, 0);
  if (instructions <= MAX_MONITOR_REGEX_INSTRUCTIONS) return undefined;
  return `${field}: the regexes together would compile to about ${instructions} instructions; at most ${MAX_MONITOR_REGEX_INSTRUCTIONS} per ${kind} are accepted (split it into several ${kind}s)`;
}

/**
 * Problems that make a ServiceMonitor unusable; empty when it is usable. An endpoint without
 * `port` or `targetPort` is fine: it scrapes every port of the selected Services. A spec over the
 * size limits of monitor-limits.ts is refused for that alone.
 *
 * @param defaultScrapeInterval the Prometheus' `scrapeInterval`, which an endpoint without
 *   `interval` inherits and its `scrapeTimeout` must not exceed.
 * @param version the Prometheus version deployed, for version-dependent features.
 */
export function validateServiceMonitor(
  monitor: ServiceMonitorResource,
  defaultScrapeInterval = DEFAULT_INTERVAL,
  version: PrometheusVersion = prometheusVersion({}),
): string[] {
  // Sizes first: an oversized monitor is measured, never compiled.
  const tooLarge = monitorSizeProblems(monitor.spec);
  if (tooLarge.length > 0) return tooLarge;
  const problems = selectorProblems(monitor.spec?.selector, 'spec.selector');
  problems.push(
    ...mechanismProblems(monitor.spec?.selectorMechanism, version),
    ...roleProblem(monitor.spec?.serviceDiscoveryRole, 'spec.serviceDiscoveryRole'),
  );
  const endpoints = monitor.spec?.endpoints;
  if (!Array.isArray(endpoints) || endpoints.length === 0) {
    problems.push('spec.endpoints: at least one endpoint is required');
    return problems;
  }
  // Estimating is cheap and compiling is not: a monitor over budget is refused before any compile.
  const overBudget = budgetProblem(endpoints, 'spec.endpoints', 'ServiceMonitor');
  if (overBudget !== undefined) return [...problems, overBudget];
  endpoints.forEach((ep, i) =>
    problems.push(...endpointProblems(ep, `spec.endpoints[${i}]`, defaultScrapeInterval)),
  );
  return problems;
}

/**
 * Problems that make a PodMonitor unusable; empty when it is usable. The same checks as for
 * ServiceMonitors, on `spec.podMetricsEndpoints`, plus `portNumber`.
 */
export function validatePodMonitor(
  monitor: PodMonitorResource,
  defaultScrapeInterval = DEFAULT_INTERVAL,
  version: PrometheusVersion = prometheusVersion({}),
): string[] {
  const tooLarge = monitorSizeProblems(monitor.spec);
  if (tooLarge.length > 0) return tooLarge;
  const problems = selectorProblems(monitor.spec?.selector, 'spec.selector');
  problems.push(...mechanismProblems(monitor.spec?.selectorMechanism, version));
  const endpoints = monitor.spec?.podMetricsEndpoints;
  if (!Array.isArray(endpoints) || endpoints.length === 0) {
    problems.push('spec.podMetricsEndpoints: at least one endpoint is required');
    return problems;
  }
  const overBudget = budgetProblem(endpoints, 'spec.podMetricsEndpoints', 'PodMonitor');
  if (overBudget !== undefined) return [...problems, overBudget];
  endpoints.forEach((ep, i) => {
    const field = `spec.podMetricsEndpoints[${i}]`;
    const portProblem = portNumberProblem(ep.portNumber, `${field}.portNumber`);
    if (portProblem !== undefined) problems.push(portProblem);
    if (ep.params != null && !validParams(ep.params))
      problems.push(`${field}.params: must map names to lists of strings`);
    problems.push(...endpointProblems(ep, field, defaultScrapeInterval));
  });
  return problems;
}

function validParams(params: unknown): boolean {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return false;
  return Object.values(params).every(
    (values) => Array.isArray(values) && values.every((v) => typeof v === 'string'),
  );
}

/**
 * Problems with the Prometheus object itself that would make the whole configuration invalid or
 * unloadable (bad durations, `scrapeTimeout` above `scrapeInterval`, an unknown version or
 * discovery role, external label names the version deployed refuses); empty when there are none.
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
      problems.push(
        `spec.scrapeTimeout: ${spec.scrapeTimeout} is greater than spec.scrapeInterval`,
      );
    }
  }
  const version = versionProblem(spec);
  if (version !== undefined) problems.push(version);
  problems.push(...roleProblem(spec.serviceDiscoveryRole, 'spec.serviceDiscoveryRole'));
  problems.push(...externalLabelProblems(prometheus));
  return problems;
}
