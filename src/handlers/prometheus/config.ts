/**
 * Prometheus configuration generation from a Prometheus object, its ServiceMonitors and PodMonitors,
 * after prometheus-operator's `pkg/prometheus/promcfg.go` (`GenerateServerConfiguration`).
 * Pure and deterministic: no I/O, same input (in any order) gives the same bytes.
 *
 * The parts live beside it: validation.ts (what is refused), scrape-jobs.ts and pod-monitor-jobs.ts
 * (the jobs), external-labels.ts, durations.ts, prometheus-version.ts.
 */
import { gzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import { DEFAULT_INTERVAL } from './durations.js';
import { externalLabels } from './external-labels.js';
import { podMonitorScrapeConfigs } from './pod-monitor-jobs.js';
import { prometheusVersion } from './prometheus-version.js';
import { LABEL_NAME, ruleProblems } from './relabel-checks.js';
import { scrapeConfigs } from './scrape-jobs.js';
import {
  monitorKey,
  podMonitorKey,
  selectPodMonitors,
  selectServiceMonitors,
} from './selectors.js';
import type {
  GeneratedConfig,
  GlobalConfig,
  NamespaceInfo,
  PodMonitorResource,
  PrometheusConfig,
  PrometheusResource,
  RelabelConfig,
  RelabelRule,
  ScrapeConfig,
  ServiceMonitorResource,
  SkippedMonitor,
} from './types.js';
import { validatePodMonitor, validatePrometheus, validateServiceMonitor } from './validation.js';

export { DEFAULT_INTERVAL, parseDuration } from './durations.js';
export { PROMETHEUS_EXTERNAL_LABEL, REPLICA_EXTERNAL_LABEL } from './external-labels.js';
export { sanitizeLabelName } from './job-parts.js';
export { podMonitorScrapeConfigs } from './pod-monitor-jobs.js';
export { regexProblem } from './regex.js';
export { RELABEL_ACTIONS } from './relabel-checks.js';
export { scrapeConfigs } from './scrape-jobs.js';
export { validatePodMonitor, validatePrometheus, validateServiceMonitor } from './validation.js';

/** What `generateConfig` takes besides ServiceMonitors and Namespaces. */
export interface GenerateExtras {
  /** Every PodMonitor in reach; those the Prometheus selects become `role: pod` jobs. */
  podMonitors?: readonly PodMonitorResource[];
  /** Rule file paths (globs) for `rule_files`, written only when there are some. */
  ruleFiles?: readonly string[];
}

/**
 * Generated rules of the rendered jobs that Prometheus would refuse to load (regexes, label names),
 * named by job and position. Catches what reaches the output from fields that are not themselves
 * regexes or label names: a port name, a sanitised `targetLabels` entry starting with a digit. The
 * user's own relabelings, which close every job's `relabel_configs` and make up its
 * `metric_relabel_configs`, were checked field by field already and are not checked twice.
 */
function renderedProblems(
  jobs: readonly ScrapeConfig[],
  userRelabelings: ReadonlyArray<readonly RelabelConfig[] | undefined>,
): string[] {
  return jobs.flatMap((job, index) => {
    const generated = job.relabel_configs.length - (userRelabelings[index] ?? []).length;
    return job.relabel_configs
      .slice(0, generated)
      .flatMap((rule, i) => ruleProblems(rule, `${job.job_name}: relabel_configs[${i}]`));
  });
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
      ...(job.metric_relabel_configs !== undefined
        ? { metric_relabel_configs: job.metric_relabel_configs.map(tokenize) }
        : {}),
    })),
  };
  // js-yaml directly: client-node's dumpYaml is this call behind an import of its whole generated API.
  const text = yaml.dump(prepared, {
    noArrayIndent: true,
    lineWidth: -1,
    noRefs: true,
    sortKeys: false,
  });
  // The token is the list's only item, on the line after its key.
  const pattern = new RegExp(`source_labels:\\n *- ${FLOW_TOKEN}(\\d+)__$`, 'gm');
  return text.replace(
    pattern,
    (_match, index: string) => `source_labels: [${(flows[Number(index)] ?? []).join(', ')}]`,
  );
}

/** One monitor kind's part of the configuration: its jobs and its skipped monitors. */
interface Rendered {
  jobs: ScrapeConfig[];
  skipped: SkippedMonitor[];
}

/** Validates, renders and re-checks each monitor: a bad one is skipped with its problems, never breaking the others. */
function renderEach<T>(
  monitors: readonly T[],
  key: (monitor: T) => string,
  validate: (monitor: T) => string[],
  render: (monitor: T) => ScrapeConfig[],
  userRelabelings: (monitor: T) => ReadonlyArray<readonly RelabelConfig[] | undefined>,
): Rendered {
  const rendered: Rendered = { jobs: [], skipped: [] };
  for (const monitor of monitors) {
    const problems = validate(monitor);
    if (problems.length > 0) {
      rendered.skipped.push({ monitor: key(monitor), problems });
      continue;
    }
    const jobs = render(monitor);
    // The last line of defence: whatever the checks above missed, no rule Prometheus refuses goes out.
    const unloadable = renderedProblems(jobs, userRelabelings(monitor));
    if (unloadable.length > 0) {
      rendered.skipped.push({ monitor: key(monitor), problems: unloadable });
      continue;
    }
    rendered.jobs.push(...jobs);
  }
  return rendered;
}

/**
 * Generates the Prometheus configuration for `prometheus` from every ServiceMonitor, PodMonitor and
 * Namespace in reach (in any order): selects the monitors (see `selectServiceMonitors`,
 * `selectPodMonitors`), leaves out invalid ones (reported in `skipped`, never thrown: a
 * ServiceMonitor by `<ns>/<name>`, a PodMonitor by `podMonitor/<ns>/<name>`), and renders one
 * scrape job per endpoint as prometheus-operator does for a single shard: ServiceMonitor jobs, then
 * PodMonitor jobs. `extra.ruleFiles`, when non-empty, become `rule_files`.
 *
 * @throws Error when the Prometheus object itself is invalid (see {@link validatePrometheus}),
 *   since no configuration could be loaded then.
 */
export function generateConfig(
  prometheus: PrometheusResource,
  monitors: readonly ServiceMonitorResource[],
  namespaces: readonly NamespaceInfo[],
  extra: GenerateExtras = {},
): GeneratedConfig {
  const invalid = validatePrometheus(prometheus);
  if (invalid.length > 0) {
    throw new Error(
      `Prometheus ${prometheus.metadata.namespace}/${prometheus.metadata.name} is invalid: ${invalid.join('; ')}`,
    );
  }
  const defaultInterval = prometheus.spec.scrapeInterval || DEFAULT_INTERVAL;
  const version = prometheusVersion(prometheus.spec);
  const services = renderEach(
    selectServiceMonitors(prometheus, monitors, namespaces),
    monitorKey,
    (monitor) => validateServiceMonitor(monitor, defaultInterval, version),
    (monitor) => scrapeConfigs(monitor, prometheus),
    (monitor) => monitor.spec.endpoints.map((ep) => ep.relabelings),
  );
  const pods = renderEach(
    selectPodMonitors(prometheus, extra.podMonitors ?? [], namespaces),
    podMonitorKey,
    (monitor) => validatePodMonitor(monitor, defaultInterval, version),
    (monitor) => podMonitorScrapeConfigs(monitor, prometheus),
    (monitor) => (monitor.spec.podMetricsEndpoints ?? []).map((ep) => ep.relabelings),
  );
  const config: PrometheusConfig = {
    global: globalConfig(prometheus),
    ...(extra.ruleFiles !== undefined && extra.ruleFiles.length > 0
      ? { rule_files: [...extra.ruleFiles] }
      : {}),
    scrape_configs: [...services.jobs, ...pods.jobs],
  };
  return { yaml: renderYaml(config), config, skipped: [...services.skipped, ...pods.skipped] };
}

/**
 * Gzips the configuration for the Secret key `prometheus.yaml.gz`. Node writes a zero mtime in
 * the gzip header, so equal YAML gives equal bytes and the Secret update can be skipped.
 */
export function gzipConfig(yaml: string): Buffer {
  return gzipSync(Buffer.from(yaml, 'utf8'));
}
