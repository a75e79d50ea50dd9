/**
 * The alerts and the dashboard read only metrics the operator exports: every `konductor_*` name they
 * use is declared by the framework (METRIC_HELP) or is one of prom-client's default process metrics,
 * which the framework collects with the same prefix. A renamed metric fails here, not on a blank panel.
 */
import { readMonitoringFiles } from '../../../src/cli/commands/monitoring-manifests.js';
import {
  METRIC_HELP,
  PrometheusMetrics,
} from '../../../src/framework/observability/prometheus-metrics.js';

const { groups, dashboard } = readMonitoringFiles();

/** The names /metrics can carry: each declared metric, and a histogram's series. */
async function exported(): Promise<Set<string>> {
  const defaults = (await new PrometheusMetrics().registry.getMetricsAsJSON()).map((m) => m.name);
  const names = [...Object.keys(METRIC_HELP).map((name) => `konductor_${name}`), ...defaults];
  return new Set(names.flatMap((name) => ['', '_bucket', '_sum', '_count'].map((s) => name + s)));
}

/** The PromQL of a dashboard: every query's `expr`, every variable's `query` and `definition`. */
function queries(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(queries);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    typeof inner === 'string'
      ? ['expr', 'query', 'definition'].includes(key)
        ? [inner]
        : []
      : queries(inner),
  );
}

/** Every `konductor_*` name in a text. */
function used(text: string): string[] {
  return [...new Set(text.match(/(?<![\w:])konductor_[\w:]*/g) ?? [])].sort();
}

describe('the metrics the alerts and the dashboard use', () => {
  test('every konductor_* metric of the alerts is one the operator exports', async () => {
    const names = used(groups.flatMap((group) => group.rules.map((rule) => rule.expr)).join('\n'));
    expect(names.length).toBeGreaterThan(0);
    const known = await exported();
    expect(names.filter((name) => !known.has(name))).toEqual([]);
  });

  test('every konductor_* metric of the dashboard is one the operator exports', async () => {
    const names = used(queries(dashboard).join('\n'));
    expect(names.length).toBeGreaterThan(0);
    const known = await exported();
    expect(names.filter((name) => !known.has(name))).toEqual([]);
  });
});
