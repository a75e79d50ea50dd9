// `konductor manifests --monitoring`: a PodMonitor, the alerts as a PrometheusRule and the Grafana
// dashboard in a ConfigMap, for the one operator the manifests deploy.
import { jest } from '@jest/globals';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import { manifestsCommand } from '../../../src/cli/commands/manifests.js';
import {
  monitoringDocuments,
  readMonitoringFiles,
  type MonitoringInstall,
} from '../../../src/cli/commands/monitoring-manifests.js';
import { parseManifests } from '../../../src/cli/options/manifests.js';
import { UsageError } from '../../../src/cli/validators.js';

const fixture = fileURLToPath(
  new URL('../../fixtures/manifests/widget-operator.ts', import.meta.url),
);
const files = readMonitoringFiles();

interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

interface Dashboard {
  uid: string;
  title: string;
  links: Array<{ title: string; url: string }>;
  templating: { list: Array<{ name: string; current?: { value?: unknown } }> };
}

/** Runs the command and returns the documents it printed. */
async function printed(args: string[]): Promise<Doc[]> {
  let stdout = '';
  const out = jest
    .spyOn(process.stdout, 'write')
    .mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true));
  const err = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    await manifestsCommand(args);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return loadAll(stdout) as Doc[];
}

/** The documents for operator `demo` in `ops`, as the command makes them. */
function documents(install: Partial<MonitoringInstall> = {}): Doc[] {
  return monitoringDocuments(
    { name: 'demo', namespace: 'ops', dashboardNamespace: 'ops', labels: {}, ...install },
    files,
  ).map(({ object }) => object as unknown as Doc);
}

function find(docs: readonly Doc[], kind: string): Doc {
  const doc = docs.find((d) => d.kind === kind);
  if (!doc) throw new Error(`no ${kind} printed`);
  return doc;
}

function dashboardOf(docs: readonly Doc[]): Dashboard {
  return JSON.parse(find(docs, 'ConfigMap').data!['konductor-dashboard.json']!) as Dashboard;
}

function rulesOf(
  docs: readonly Doc[],
): Array<{ alert: string; expr: string; annotations: Record<string, string> }> {
  const groups = find(docs, 'PrometheusRule').spec!.groups as Array<{
    rules: Array<{ alert: string; expr: string; annotations: Record<string, string> }>;
  }>;
  return groups.flatMap((group) => group.rules);
}

function refusal(args: string[]): string {
  try {
    parseManifests([fixture, ...args]);
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  throw new Error(`expected a UsageError for ${JSON.stringify(args)}`);
}

describe('konductor manifests --monitoring', () => {
  test('prints a PodMonitor, a PrometheusRule and the dashboard ConfigMap after the Deployment', async () => {
    const docs = await printed([fixture, '--name', 'demo', '--namespace', 'ops', '--monitoring']);
    expect(
      docs.slice(-4).map((d) => `${d.kind}/${d.metadata.namespace}/${d.metadata.name}`),
    ).toEqual([
      'Deployment/ops/demo',
      'PodMonitor/ops/demo',
      'PrometheusRule/ops/demo-alerts',
      'ConfigMap/ops/demo-dashboard',
    ]);
  });

  test('without --monitoring, the options ask for no monitoring', () => {
    const parsed = parseManifests([fixture]);
    expect(parsed.help === false && parsed.options.monitoring).toBeUndefined();
  });

  test("the PodMonitor scrapes /metrics on the Deployment's health port, its job being the --name", () => {
    expect(find(documents(), 'PodMonitor').spec).toEqual({
      jobLabel: 'app.kubernetes.io/name',
      selector: { matchLabels: { 'app.kubernetes.io/name': 'demo' } },
      podMetricsEndpoints: [{ port: 'health', path: '/metrics', interval: '30s' }],
    });
  });

  test("every alert selects the operator's own series only: its namespace and job", () => {
    const rules = rulesOf(documents());
    expect(rules.map((rule) => rule.alert)).toEqual(
      files.groups.flatMap((group) => group.rules.map((rule) => rule.alert)),
    );
    for (const rule of rules) {
      const selectors = [...rule.expr.matchAll(/konductor_\w+(\{[^}]*\})?/g)];
      expect(selectors.length).toBeGreaterThan(0);
      for (const [selector, matchers] of selectors) {
        expect([selector, matchers]).toEqual([
          selector,
          expect.stringMatching(/^\{namespace="ops", job="demo"/),
        ]);
      }
    }
  });

  test('the ConfigMap holds the dashboard labelled grafana_dashboard=1, with its own uid and the operator preselected', () => {
    const docs = documents();
    expect(find(docs, 'ConfigMap').metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    const dashboard = dashboardOf(docs);
    expect(dashboard.title).toBe('Konductor operator ops/demo');
    expect(dashboard.uid).not.toBe(dashboardOf(documents({ name: 'other' })).uid);
    expect(dashboard.uid.length).toBeLessThanOrEqual(40);
    const current = Object.fromEntries(
      dashboard.templating.list.map((variable) => [variable.name, variable.current?.value]),
    );
    expect(current).toMatchObject({ namespace: ['ops'], job: ['demo'] });
  });

  test('--monitoring-label labels the PodMonitor, the PrometheusRule and the ConfigMap', () => {
    const parsed = parseManifests([
      fixture,
      '--monitoring',
      '--monitoring-label',
      'release=kube-prometheus-stack',
      '--monitoring-label',
      'example.com/team=shop',
    ]);
    if (parsed.help) throw new Error('unexpected help');
    const labels = parsed.options.monitoring!.labels;
    expect(labels).toEqual({ release: 'kube-prometheus-stack', 'example.com/team': 'shop' });
    for (const doc of documents({ labels })) {
      expect([doc.kind, doc.metadata.labels]).toEqual([doc.kind, expect.objectContaining(labels)]);
    }
  });

  test("--dashboard-namespace moves the ConfigMap only; it defaults to the operator's namespace", () => {
    const parsed = parseManifests([fixture, '--namespace', 'ops', '--monitoring']);
    if (parsed.help) throw new Error('unexpected help');
    expect(parsed.options.monitoring!.dashboardNamespace).toBe('ops');
    const docs = documents({ dashboardNamespace: 'grafana' });
    expect(docs.map((d) => `${d.kind}/${d.metadata.namespace}`)).toEqual([
      'PodMonitor/ops',
      'PrometheusRule/ops',
      'ConfigMap/grafana',
    ]);
  });

  test("--runbook-url replaces the page the alerts and the dashboard link to, keeping each alert's anchor", () => {
    const page = 'https://wiki.example.com/konductor';
    const docs = documents({ runbookUrl: page });
    for (const rule of rulesOf(docs)) {
      expect(rule.annotations.runbook_url).toBe(`${page}#${rule.alert.toLowerCase()}`);
    }
    expect(dashboardOf(docs).links.find((link) => link.title === 'Runbook')?.url).toBe(page);
  });

  test.each([
    [['--monitoring-label', 'release=x'], '--monitoring-label needs --monitoring'],
    [['--dashboard-namespace', 'grafana'], '--dashboard-namespace needs --monitoring'],
    [['--runbook-url', 'https://wiki.example.com/x'], '--runbook-url needs --monitoring'],
    [
      ['--monitoring', '--monitoring-label', 'release'],
      "--monitoring-label 'release' is not a label",
    ],
    [['--monitoring', '--monitoring-label', 'a b=c'], "--monitoring-label 'a b=c' is not a label"],
    [
      ['--monitoring', '--runbook-url', 'wiki/page'],
      "--runbook-url 'wiki/page' is not the URL of a page",
    ],
    [
      ['--monitoring', '--runbook-url', 'https://wiki.example.com/x#top'],
      "--runbook-url 'https://wiki.example.com/x#top' is not the URL of a page",
    ],
  ])('%j is refused: %s', (args, message) => {
    expect(refusal(args)).toContain(message);
  });
});
