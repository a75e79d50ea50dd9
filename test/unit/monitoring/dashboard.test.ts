/**
 * monitoring/konductor-dashboard.json is a dashboard Grafana imports as is: well-formed, every query on
 * the data source the viewer picks, filtered by the namespace and job variables, and PromQL that
 * Prometheus parses (checked with the real promtool).
 */
import {
  DASHBOARD_FILE,
  readMonitoringFiles,
} from '../../../src/cli/commands/monitoring-manifests.js';
import { promtool, scratch } from '../../support/promtool.js';

interface Target {
  datasource?: { type?: string; uid?: string };
  expr: string;
  refId: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Target[];
}
interface Variable {
  name: string;
  type: string;
  query: unknown;
  datasource?: { uid?: string };
}

const dashboard = readMonitoringFiles().dashboard as {
  schemaVersion: number;
  uid: string;
  panels: Panel[];
  templating: { list: Variable[] };
};
const panels = dashboard.panels.filter((panel) => panel.type !== 'row');
const targets = panels.flatMap((panel) =>
  (panel.targets ?? []).map((target) => ({ panel: panel.title, ...target })),
);
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

/** Each `konductor_*` selector of an expression, with its matchers. */
function selectors(expr: string): Array<{ metric: string; matchers: string }> {
  return [...expr.matchAll(/(?<![\w:])(konductor_[\w:]*)(?:\s*\{([^}]*)\})?/g)].map((match) => ({
    metric: match[1]!,
    matchers: match[2] ?? '',
  }));
}

describe(`the Grafana dashboard (monitoring/${DASHBOARD_FILE})`, () => {
  test('has a current schema (39 or later), a uid and a title', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(dashboard.uid).toMatch(/^[\w-]{1,40}$/);
  });

  test('asks for a Prometheus data source, then a namespace and a job read from it', () => {
    const [datasource, namespace, job] = dashboard.templating.list;
    expect(datasource).toMatchObject({
      name: 'datasource',
      type: 'datasource',
      query: 'prometheus',
    });
    for (const variable of [namespace, job]) {
      expect(variable).toMatchObject({ type: 'query', datasource: { uid: '${datasource}' } });
    }
    expect([namespace?.name, job?.name]).toEqual(['namespace', 'job']);
  });

  test('every panel and every query reads the ${datasource} variable', () => {
    expect(panels.length).toBeGreaterThan(0);
    for (const panel of panels)
      expect([panel.title, panel.datasource]).toEqual([panel.title, DATASOURCE]);
    for (const target of targets)
      expect([target.panel, target.datasource]).toEqual([target.panel, DATASOURCE]);
  });

  test('panel ids are unique, and so are the query ids of each panel', () => {
    const ids = dashboard.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of panels) {
      const refIds = (panel.targets ?? []).map((target) => target.refId);
      expect(new Set(refIds).size).toBe(refIds.length);
    }
  });

  test('panels sit on the 24-column grid without overlapping', () => {
    const taken = new Set<string>();
    for (const { title, gridPos } of dashboard.panels) {
      expect([title, gridPos.x + gridPos.w <= 24]).toEqual([title, true]);
      for (let x = gridPos.x; x < gridPos.x + gridPos.w; x++) {
        for (let y = gridPos.y; y < gridPos.y + gridPos.h; y++) {
          expect([title, taken.has(`${x},${y}`)]).toEqual([title, false]);
          taken.add(`${x},${y}`);
        }
      }
    }
  });

  test('every konductor_* series of every query is filtered by the namespace and job variables', () => {
    for (const target of targets) {
      const found = selectors(target.expr);
      expect([target.panel, found.length > 0]).toEqual([target.panel, true]);
      for (const { metric, matchers } of found) {
        expect([target.panel, metric, matchers]).toEqual([
          target.panel,
          metric,
          expect.stringContaining('namespace=~"$namespace", job=~"$job"'),
        ]);
      }
    }
  });

  test('every query is PromQL that promtool parses, with the Grafana variables filled in', async () => {
    const filled = (expr: string): string =>
      expr
        .replaceAll('$__rate_interval', '5m')
        .replaceAll('$namespace', '.*')
        .replaceAll('$job', '.*');
    const files = scratch();
    try {
      const path = files.write('dashboard-queries.yaml', {
        groups: [
          {
            name: 'dashboard',
            rules: targets.map((target, i) => ({
              record: `dashboard:query_${i}`,
              expr: filled(target.expr),
            })),
          },
        ],
      });
      const result = await promtool(['check', 'rules', path]);
      expect(result.output).toContain(`SUCCESS: ${targets.length} rules found`);
    } finally {
      files.remove();
    }
  });

  test('plots throughput, queue, handlers, retries, API requests, watches, the Lease holder and memory', () => {
    const plotted = new Set(
      targets.flatMap((target) => selectors(target.expr).map((s) => s.metric)),
    );
    for (const metric of [
      'konductor_reactor_runs_total',
      'konductor_watch_events_total',
      'konductor_reactor_queue_depth',
      'konductor_reactor_queue_wait_seconds_bucket',
      'konductor_handler_duration_seconds_bucket',
      'konductor_handler_runs_total',
      'konductor_reactor_objects_retrying',
      'konductor_api_requests_total',
      'konductor_watch_reconnects_total',
      'konductor_watch_lag_seconds_bucket',
      'konductor_watch_last_activity_timestamp_seconds',
      'konductor_leader',
      'konductor_process_resident_memory_bytes',
      'konductor_memory_limit_bytes',
      'konductor_nodejs_heap_size_used_bytes',
    ]) {
      expect([metric, plotted.has(metric)]).toEqual([metric, true]);
    }
  });
});
