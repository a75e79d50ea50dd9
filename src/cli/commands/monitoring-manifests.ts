// What `konductor manifests --monitoring` adds: a PodMonitor scraping the operator's /metrics, its
// alerts as a PrometheusRule and its Grafana dashboard in a ConfigMap. The alerts and the dashboard
// are the files of monitoring/ (shipped in the package, usable without the CLI), read at run time;
// everything else here is pure.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import type { ManifestDocument } from './manifest-objects.js';

/** monitoring/ at the package root: three folders up from src/cli/commands and from dist/cli/commands. */
export const MONITORING_FOLDER = fileURLToPath(new URL('../../../monitoring/', import.meta.url));
/** The alert rules, in Prometheus's rule-file format. */
export const ALERTS_FILE = 'konductor-alerts.yaml';
/** The Grafana dashboard, as Grafana exports it; also its key in the ConfigMap (the sidecar loads `*.json` keys). */
export const DASHBOARD_FILE = 'konductor-dashboard.json';
/** The pod label whose value the PodMonitor makes the `job` label, so the alerts can select by it. */
const JOB_LABEL = 'app.kubernetes.io/name';

/** One alerting rule of a rule group. */
export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** One group of a Prometheus rule file (and of a PrometheusRule's `spec.groups`). */
export interface RuleGroup {
  name: string;
  interval?: string;
  rules: AlertRule[];
}

/** A Grafana dashboard model; only its uid, title, links and variables are changed here. */
export type Dashboard = Record<string, unknown>;

/** The shipped monitoring files, parsed. */
export interface MonitoringFiles {
  groups: RuleGroup[];
  dashboard: Dashboard;
}

/** Which operator the monitoring is for, and where it goes. */
export interface MonitoringInstall {
  /** The operator's name: its pods' `app.kubernetes.io/name`, hence the `job` label of its metrics. */
  name: string;
  /** The operator's namespace: the PodMonitor's and the PrometheusRule's. */
  namespace: string;
  /** Where the dashboard's ConfigMap goes (Grafana's sidecar watches some namespaces only). */
  dashboardNamespace: string;
  /** Extra labels on all three objects, for a Prometheus's podMonitorSelector and ruleSelector. */
  labels: Readonly<Record<string, string>>;
  /** Replaces the runbook page the alerts and the dashboard link to (each alert's anchor is kept). */
  runbookUrl?: string;
}

/** Reads and checks the files of monitoring/; a missing one means a broken installation. */
export function readMonitoringFiles(folder = MONITORING_FOLDER): MonitoringFiles {
  const read = (file: string): string => {
    try {
      return readFileSync(join(folder, file), 'utf8');
    } catch (error) {
      throw new Error(
        `konductor's monitoring files are missing (${join(folder, file)}): reinstall konductor. ` +
          `${error instanceof Error ? error.message : String(error)}`,
      );
    }
  };
  return {
    groups: ruleGroups(load(read(ALERTS_FILE))),
    dashboard: JSON.parse(read(DASHBOARD_FILE)) as Dashboard,
  };
}

/** The `groups` of a rule file, checked for the fields used here. */
export function ruleGroups(file: unknown): RuleGroup[] {
  const groups = (file as { groups?: unknown } | null)?.groups;
  if (!Array.isArray(groups)) throw new Error('a rule file needs a list of groups');
  for (const group of groups as Array<Partial<RuleGroup>>) {
    if (typeof group.name !== 'string' || !Array.isArray(group.rules)) {
      throw new Error('each rule group needs a name and a list of rules');
    }
    for (const rule of group.rules as Array<Partial<AlertRule>>) {
      if (typeof rule.alert !== 'string' || typeof rule.expr !== 'string') {
        throw new Error(`group ${group.name}: each rule needs an alert name and an expr`);
      }
    }
  }
  return groups as RuleGroup[];
}

// A double- or single-quoted string (kept as is), or a konductor_* metric name with its matchers.
const SELECTOR =
  /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|(?<![\w:])(konductor_[\w:]*)(?:\s*\{([^}]*)\})?/g;

/**
 * The expression with `matchers` added to every `konductor_*` selector, so rules written for all
 * operators select one: `absent(konductor_leader)` becomes `absent(konductor_leader{job="demo"})`.
 * Made for the shipped rules (no `}` inside their label values), not for any PromQL.
 */
export function scopeExpression(expr: string, matchers: Readonly<Record<string, string>>): string {
  const added = Object.entries(matchers).map(
    ([label, value]) => `${label}=${JSON.stringify(value)}`,
  );
  return expr.replace(SELECTOR, (match, metric: string | undefined, inner: string | undefined) => {
    if (metric === undefined) return match;
    const existing = inner?.trim() ? [inner.trim()] : [];
    return `${metric}{${[...added, ...existing].join(', ')}}`;
  });
}

/** `url` with its page replaced by `page`, its `#anchor` kept. */
function onPage(url: string, page: string | undefined): string {
  if (page === undefined) return url;
  const hash = url.indexOf('#');
  return hash < 0 ? page : `${page}${url.slice(hash)}`;
}

/** The shipped rules for one operator: each selector scoped to its namespace and job, the groups named after it. */
export function operatorRules(
  groups: readonly RuleGroup[],
  operator: { namespace: string; job: string; runbookUrl?: string },
): RuleGroup[] {
  const matchers = { namespace: operator.namespace, job: operator.job };
  return groups.map((group) => ({
    ...group,
    name: `${group.name}/${operator.namespace}/${operator.job}`,
    rules: group.rules.map((rule) => ({
      ...rule,
      expr: scopeExpression(rule.expr, matchers),
      ...(rule.annotations
        ? {
            annotations: Object.fromEntries(
              Object.entries(rule.annotations).map(([key, value]) => [
                key,
                key === 'runbook_url' ? onPage(value, operator.runbookUrl) : value,
              ]),
            ),
          }
        : {}),
    })),
  }));
}

/**
 * The shipped dashboard for one operator: its own uid and title (so several operators' dashboards do
 * not replace each other in Grafana), its namespace and job preselected, the runbook link moved.
 */
export function operatorDashboard(
  dashboard: Dashboard,
  operator: { namespace: string; job: string; runbookUrl?: string },
): Dashboard {
  const key = `${operator.namespace}/${operator.job}`;
  const selected = (value: string): Record<string, unknown> => ({
    selected: true,
    text: [value],
    value: [value],
  });
  const templating = dashboard.templating as { list?: Array<Record<string, unknown>> } | undefined;
  const links = dashboard.links as Array<Record<string, unknown>> | undefined;
  return {
    ...dashboard,
    uid: `konductor-${createHash('sha256').update(key).digest('hex').slice(0, 16)}`,
    title: `Konductor operator ${key}`,
    links: (links ?? []).map((link) =>
      link.title === 'Runbook' && typeof link.url === 'string'
        ? { ...link, url: onPage(link.url, operator.runbookUrl) }
        : link,
    ),
    templating: {
      ...templating,
      list: (templating?.list ?? []).map((variable) =>
        variable.name === 'namespace'
          ? { ...variable, current: selected(operator.namespace) }
          : variable.name === 'job'
            ? { ...variable, current: selected(operator.job) }
            : variable,
      ),
    },
  };
}

/** The PodMonitor, the PrometheusRule and the dashboard's ConfigMap of one operator. */
export function monitoringDocuments(
  install: MonitoringInstall,
  files: MonitoringFiles,
): ManifestDocument[] {
  const { name, namespace } = install;
  const labels = { [JOB_LABEL]: name, ...install.labels };
  const operator = {
    namespace,
    job: name,
    ...(install.runbookUrl ? { runbookUrl: install.runbookUrl } : {}),
  };
  return [
    {
      comments: [
        "Monitoring (needs the Prometheus operator's CRDs): the operator's /metrics on its health port,",
        `with job="${name}" (its pods' ${JOB_LABEL}), the label the alerts below select.`,
      ],
      object: {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'PodMonitor',
        metadata: { name, namespace, labels },
        spec: {
          jobLabel: JOB_LABEL,
          selector: { matchLabels: { [JOB_LABEL]: name } },
          podMetricsEndpoints: [{ port: 'health', path: '/metrics', interval: '30s' }],
        },
      },
    },
    {
      comments: [
        `The alerts of monitoring/konductor-alerts.yaml, for namespace="${namespace}", job="${name}" only.`,
        'What each means and what to do: their runbook_url (docs/running/alerts.md).',
      ],
      object: {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'PrometheusRule',
        metadata: { name: `${name}-alerts`, namespace, labels },
        spec: { groups: operatorRules(files.groups, operator) },
      },
    },
    {
      comments: [
        'The Grafana dashboard of monitoring/konductor-dashboard.json, for the sidecar of Grafana',
        '(kube-prometheus-stack: grafana.sidecar.dashboards) to load: it picks ConfigMaps labelled grafana_dashboard=1.',
      ],
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: `${name}-dashboard`,
          namespace: install.dashboardNamespace,
          labels: { ...labels, grafana_dashboard: '1' },
        },
        data: {
          [DASHBOARD_FILE]: `${JSON.stringify(operatorDashboard(files.dashboard, operator), null, 2)}\n`,
        },
      },
    },
  ];
}
