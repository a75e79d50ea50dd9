/**
 * The bundled Prometheus operator on a real node, with Debian's Prometheus in a Pod: ServiceMonitor and
 * PodMonitor targets scraped for real, a PrometheusRule loaded and firing, Konductor's own alerts
 * (`konductor manifests --monitoring`) loaded and evaluated, a deleted monitor's targets gone after the
 * reload, and each monitor's acceptance visible with kubectl get.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { dump, loadAll } from 'js-yaml';
import {
  REPO,
  deployOperator,
  getJson,
  kubectlOk,
  localNode,
  rolledOut,
  waitFor,
} from '../support/node.js';

const RELOADER_IMAGE = 'docker.io/konductor/prometheus-config-reloader:0.1.0';
const CLUSTER = 'example-etcd-cluster';
/** The Prometheus the node has an image of: Debian sid's (bookworm's 2.42 has no Kubernetes discovery). */
const VERSION = 'v3.5.3';
/** examples/prometheus.yaml as written, but for the Prometheus version the node can run. */
const example = readFileSync(resolve(REPO, 'examples/prometheus.yaml'), 'utf8').replace(
  /version: v\S+/,
  `version: ${VERSION}`,
);

interface Target {
  scrapePool: string;
  health: string;
  labels: Record<string, string>;
  lastError?: string;
}

/** GETs Prometheus's HTTP API from inside the node (Pod addresses exist only there). */
async function prometheusApi<T>(path: string): Promise<T> {
  const pod = await getJson<{ status?: { podIP?: string } }>([
    'pod',
    '-n',
    'monitoring',
    'prometheus-main-0',
  ]);
  const ip = pod?.status?.podIP;
  if (!ip) throw new Error('prometheus-main-0 has no Pod IP yet');
  const run = await localNode().runInNode('curl', [
    '-sf',
    '--max-time',
    '5',
    `http://${ip}:9090${path}`,
  ]);
  if (run.code !== 0)
    throw new Error(
      `GET ${path} from Prometheus failed (curl exit ${run.code}): ${run.stderr.trim()}`,
    );
  return (JSON.parse(run.stdout) as { data: T }).data;
}

async function targets(scrapePool: string): Promise<Target[]> {
  const data = await prometheusApi<{ activeTargets: Target[] }>('/api/v1/targets?state=active');
  return data.activeTargets.filter((target) => target.scrapePool === scrapePool);
}

/** Waits until every target of `scrapePool` is up and they cover the 3 member Pods; returns the seconds it took from `since`. */
async function allUp(scrapePool: string, since: number): Promise<number> {
  await waitFor(
    async () => {
      const found = await targets(scrapePool).catch(() => []);
      const pods = new Set(found.map((target) => target.labels.pod));
      return (
        found.length >= 3 && pods.size === 3 && found.every((target) => target.health === 'up')
      );
    },
    {
      what: `every target of ${scrapePool} up, covering the 3 etcd members`,
      timeoutMs: 120_000,
      intervalMs: 2_000,
    },
  );
  return (Date.now() - since) / 1000;
}

function manifest(kind: string, name: string, spec: string): string {
  return `apiVersion: monitoring.coreos.com/v1
kind: ${kind}
metadata:
  name: ${name}
  namespace: default
  labels:
    team: shop
spec:
${spec}`;
}

const serviceMonitor = manifest(
  'ServiceMonitor',
  'etcd-members',
  `  selector:
    matchLabels:
      etcd_cluster: ${CLUSTER}
  endpoints:
    - port: client
      interval: 10s
`,
);
const podMonitor = manifest(
  'PodMonitor',
  'etcd-pods',
  `  selector:
    matchLabels:
      etcd_cluster: ${CLUSTER}
  podMetricsEndpoints:
    - port: client
      interval: 10s
`,
);
const rule = manifest(
  'PrometheusRule',
  'always',
  `  groups:
    - name: e2e
      interval: 5s
      rules:
        - alert: AlwaysFiring
          expr: vector(1)
`,
);

/** Konductor's alerts and dashboard for the bundled operator as deploy/ installs it, selected by examples/prometheus.yaml. */
const KONDUCTOR_ALERTS = [
  'KonductorHandlerFailures',
  'KonductorQueueWaitHigh',
  'KonductorWatchStalled',
  'KonductorNoLeader',
  'KonductorMemoryNearLimit',
];
let konductorMonitoring = '';

/** The PodMonitor, PrometheusRule and ConfigMap `konductor manifests --monitoring` prints for it. */
async function monitoringManifests(): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      resolve(REPO, 'bin/konductor.mjs'),
      'manifests',
      resolve(REPO, 'src/handlers'),
      '--name',
      'konductor',
      '--namespace',
      'konductor-system',
      '--monitoring',
      '--monitoring-label',
      'team=shop',
      '--dashboard-namespace',
      'monitoring',
    ],
    { cwd: REPO, maxBuffer: 16 * 1024 * 1024 },
  );
  return (loadAll(stdout) as Array<{ kind: string }>)
    .filter((doc) => ['PodMonitor', 'PrometheusRule', 'ConfigMap'].includes(doc.kind))
    .map((doc) => dump(doc, { lineWidth: -1 }))
    .join('---\n');
}

beforeAll(async () => {
  await localNode().loadBuiltImages(['prometheus', 'prometheus-config-reloader']);
  await deployOperator(120);
  // Upstream's reloader image is not in Debian: the operator is told to use the stand-in built here.
  await kubectlOk([
    '-n',
    'konductor-system',
    'set',
    'env',
    'deployment/konductor',
    `KONDUCTOR_PROMETHEUS_CONFIG_RELOADER_IMAGE=${RELOADER_IMAGE}`,
  ]);
  await rolledOut(180);
  await kubectlOk(['apply', '-f', resolve(REPO, 'examples/etcd.yaml')]);
}, 900_000);

afterAll(async () => {
  await kubectlOk(
    ['delete', '--ignore-not-found', '-f', '-'],
    [serviceMonitor, podMonitor, rule, ...(konductorMonitoring ? [konductorMonitoring] : [])].join(
      '---\n',
    ),
  );
  await kubectlOk(['delete', '--ignore-not-found', '-f', resolve(REPO, 'deploy/monitoring')]);
  // The Prometheus and its Pod first: a namespace deleted with a Pod in it is checked again only after
  // about half the Pod's grace period (600 s, as upstream's), however soon the Pod is gone.
  await kubectlOk([
    'delete',
    'prometheus',
    '-n',
    'monitoring',
    'main',
    '--ignore-not-found',
    '--wait=true',
    '--timeout=120s',
  ]);
  await waitFor(
    async () => (await getJson(['pod', '-n', 'monitoring', 'prometheus-main-0'])) === undefined,
    { what: 'prometheus-main-0 gone', timeoutMs: 120_000, intervalMs: 1_000 },
  );
  await kubectlOk(
    ['delete', '--ignore-not-found', '--wait=true', '--timeout=120s', '-f', '-'],
    example,
  );
  await kubectlOk([
    'delete',
    '--ignore-not-found',
    '--wait=true',
    '--timeout=180s',
    '-f',
    resolve(REPO, 'examples/etcd.yaml'),
  ]);
  await kubectlOk([
    '-n',
    'konductor-system',
    'set',
    'env',
    'deployment/konductor',
    'KONDUCTOR_PROMETHEUS_CONFIG_RELOADER_IMAGE-',
  ]);
}, 300_000);

describe('the bundled Prometheus operator on a real node', () => {
  it('brings examples/prometheus.yaml to a Running, Ready Prometheus Pod', async () => {
    const started = Date.now();
    await kubectlOk(['apply', '-f', '-'], example);
    await waitFor(
      async () => {
        const pod = await getJson<{ status?: { conditions?: { type: string; status: string }[] } }>(
          ['pod', '-n', 'monitoring', 'prometheus-main-0'],
        );
        return (
          pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false
        );
      },
      { what: 'prometheus-main-0 Ready', timeoutMs: 240_000, intervalMs: 2_000 },
    );
    process.stderr.write(
      `[e2e] examples/prometheus.yaml: Prometheus Pod Ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
    const build = await prometheusApi<{ version: string }>('/api/v1/status/buildinfo');
    expect(build.version).toMatch(/^3\.5\./);
  }, 300_000);

  it('scrapes each etcd member a ServiceMonitor selects: every target up within 2 minutes, and the monitor says Accepted', async () => {
    await waitFor(
      async () =>
        (await getJson<{ status?: { phase?: string } }>(['etcdcluster', CLUSTER]))?.status
          ?.phase === 'Running',
      {
        what: `${CLUSTER} Running`,
        timeoutMs: 180_000,
        intervalMs: 2_000,
      },
    );
    const applied = Date.now();
    await kubectlOk(['apply', '-f', '-'], serviceMonitor);
    const seconds = await allUp('serviceMonitor/default/etcd-members/0', applied);
    process.stderr.write(
      `[e2e] ServiceMonitor applied -> every etcd target up in ${seconds.toFixed(1)} s\n`,
    );
    const table = await kubectlOk(['get', 'servicemonitor', 'etcd-members', '-o', 'wide']);
    expect(table).toMatch(/^etcd-members\s+True\s+main\s+client\s+/m);
  }, 180_000);

  it('scrapes each etcd member a PodMonitor selects the same way', async () => {
    const applied = Date.now();
    await kubectlOk(['apply', '-f', '-'], podMonitor);
    const seconds = await allUp('podMonitor/default/etcd-pods/0', applied);
    process.stderr.write(
      `[e2e] PodMonitor applied -> every etcd target up in ${seconds.toFixed(1)} s\n`,
    );
  }, 180_000);

  it('loads a PrometheusRule: its group is in /api/v1/rules and its always-firing alert in ALERTS', async () => {
    const applied = Date.now();
    await kubectlOk(['apply', '-f', '-'], rule);
    await waitFor(
      async () => {
        const data = await prometheusApi<{ groups: { name: string; file: string }[] }>(
          '/api/v1/rules',
        ).catch(() => ({ groups: [] }));
        return data.groups.some((group) => group.name === 'e2e');
      },
      { what: 'rule group e2e loaded by Prometheus', timeoutMs: 180_000, intervalMs: 2_000 },
    );
    await waitFor(
      async () => {
        const query = encodeURIComponent('ALERTS{alertname="AlwaysFiring",alertstate="firing"}');
        const data = await prometheusApi<{ result: unknown[] }>(
          `/api/v1/query?query=${query}`,
        ).catch(() => ({ result: [] }));
        return data.result.length > 0;
      },
      { what: 'AlwaysFiring firing in ALERTS', timeoutMs: 120_000, intervalMs: 2_000 },
    );
    process.stderr.write(
      `[e2e] PrometheusRule applied -> alert firing in ${((Date.now() - applied) / 1000).toFixed(1)} s\n`,
    );
    const table = await kubectlOk(['get', 'prometheusrule', 'always']);
    expect(table).toMatch(/^always\s+True\s+/m);
  }, 300_000);

  it("loads Konductor's own alerts from konductor manifests --monitoring: every one evaluates, and KonductorNoLeader stays quiet once the leader is scraped", async () => {
    const applied = Date.now();
    konductorMonitoring = await monitoringManifests();
    await kubectlOk(['apply', '-f', '-'], konductorMonitoring);
    const group = 'konductor/konductor-system/konductor';
    type Rules = {
      groups: { name: string; rules: { name: string; health: string; state: string }[] }[];
    };
    const ours = async (): Promise<Rules['groups'][number]['rules']> =>
      (
        await prometheusApi<Rules>('/api/v1/rules?type=alert').catch(() => ({ groups: [] }))
      ).groups.find((found) => found.name === group)?.rules ?? [];
    // Evaluated without error: Prometheus 3's PromQL takes every expression.
    await waitFor(
      async () => {
        const rules = await ours();
        return rules.length === KONDUCTOR_ALERTS.length && rules.every((r) => r.health === 'ok');
      },
      { what: `rule group ${group} loaded and evaluated`, timeoutMs: 180_000, intervalMs: 2_000 },
    );
    expect((await ours()).map((r) => r.name)).toEqual(KONDUCTOR_ALERTS);
    // The PodMonitor gives the operator's series job="konductor", the job the rules select.
    await waitFor(
      async () => {
        const query = encodeURIComponent(
          'konductor_leader{namespace="konductor-system", job="konductor"} == 1',
        );
        const data = await prometheusApi<{ result: unknown[] }>(
          `/api/v1/query?query=${query}`,
        ).catch(() => ({ result: [] }));
        return data.result.length === 1;
      },
      { what: 'the leader scraped through the PodMonitor', timeoutMs: 120_000, intervalMs: 2_000 },
    );
    await waitFor(
      async () => (await ours()).find((r) => r.name === 'KonductorNoLeader')?.state === 'inactive',
      { what: 'KonductorNoLeader inactive', timeoutMs: 120_000, intervalMs: 2_000 },
    );
    process.stderr.write(
      `[e2e] konductor manifests --monitoring applied -> its ${KONDUCTOR_ALERTS.length} alerts evaluated, no leader alert, in ${((Date.now() - applied) / 1000).toFixed(1)} s\n`,
    );
    expect(
      await kubectlOk(['get', 'prometheusrule', '-n', 'konductor-system', 'konductor-alerts']),
    ).toMatch(/^konductor-alerts\s+True\s+/m);
  }, 300_000);

  it("scrapes the operator's own /metrics through the ServiceMonitor in deploy/monitoring/", async () => {
    const applied = Date.now();
    await kubectlOk(['apply', '-f', resolve(REPO, 'deploy/monitoring')]);
    const pool = 'serviceMonitor/konductor-system/konductor/0';
    await waitFor(
      async () => {
        const found = await targets(pool).catch(() => []);
        return found.length === 1 && found[0]!.health === 'up';
      },
      { what: `the operator's target (${pool}) up`, timeoutMs: 120_000, intervalMs: 2_000 },
    );
    process.stderr.write(
      `[e2e] deploy/monitoring/ applied -> the operator's own target up in ${((Date.now() - applied) / 1000).toFixed(1)} s\n`,
    );
    const query = encodeURIComponent(
      'count({__name__=~"konductor_.+", namespace="konductor-system"})',
    );
    const data = await prometheusApi<{ result: { value: [number, string] }[] }>(
      `/api/v1/query?query=${query}`,
    );
    expect(Number(data.result[0]?.value[1] ?? 0)).toBeGreaterThan(0);
    expect(
      await kubectlOk(['get', 'servicemonitor', '-n', 'konductor-system', 'konductor']),
    ).toMatch(/^konductor\s+True\s+/m);
  }, 180_000);

  it("drops a deleted ServiceMonitor's targets once Prometheus reloads", async () => {
    const deleted = Date.now();
    await kubectlOk(['delete', 'servicemonitor', 'etcd-members']);
    await waitFor(
      async () => (await targets('serviceMonitor/default/etcd-members/0')).length === 0,
      {
        what: "the deleted ServiceMonitor's targets gone",
        timeoutMs: 120_000,
        intervalMs: 2_000,
      },
    );
    process.stderr.write(
      `[e2e] ServiceMonitor deleted -> its targets gone in ${((Date.now() - deleted) / 1000).toFixed(1)} s\n`,
    );
    expect((await targets('podMonitor/default/etcd-pods/0')).length).toBeGreaterThanOrEqual(3);
  }, 180_000);
});
