/**
 * Manifests shaped like the original operators' published examples
 * (test/fixtures/upstream, see its README) apply with kubectl's DEFAULT validation, keep every field
 * they set, and are reconciled by the bundled operators.
 *
 * kubectl is the one `npm run provision` unpacks from Debian's kubernetes-client: the control plane's
 * own version (1.20), whose `apply` validates client-side against the API server's published OpenAPI
 * and refuses unknown fields (`unknown field "enableAdminAPI"`).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import {
  AppsV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { load } from 'js-yaml';
import { ApiClient } from '../../../src/framework/index.js';
import { S3Storage } from '../../../src/handlers/etcd/storage/index.js';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import {
  installCrds,
  readCrds,
  readManifests,
  runOperator,
  type TestOperator,
} from '../../../src/testing/index.js';
import { kubectl, runProgram, type KubectlRun } from '../../support/kubectl.js';
import { sharedKubeConfig, statusOf, uniqueNamespace } from '../../support/cluster.js';
import {
  allHealthy,
  etcdStatus,
  installEtcdCrds,
  memberList,
  readCluster,
  startEtcdOperator,
  type EtcdHarness,
} from '../../support/etcd.js';
import { startS3Server, type TestS3Server } from '../../support/s3-server.js';
import { waitFor } from '../../support/wait-for.js';

const fixtures = fileURLToPath(new URL('../../fixtures/upstream/', import.meta.url));
const prometheusFixtures = join(fixtures, 'prometheus');
const etcdFixtures = join(fixtures, 'etcd');
/** What the backup fixtures name as their S3-compatible store; the reconciling spec points it at s3rver. */
const FIXTURE_S3_ENDPOINT = 'http://s3.example.test:9000';

let kc: KubeConfig;
let objects: KubernetesObjectApi;
let workDir: string;

beforeAll(() => {
  kc = sharedKubeConfig();
  objects = KubernetesObjectApi.makeApiClient(kc);
  workDir = mkdtempSync(join(tmpdir(), 'konductor-compat-'));
});
afterAll(() => {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

// ---- kubectl -------------------------------------------------------------------------------------

/**
 * Waits until the API server's OpenAPI document, which kubectl validates against, describes every
 * kind: a CRD's schema is published shortly after the CRD is established, and before that kubectl
 * would validate nothing about it.
 */
async function publishedInOpenAPI(group: string, kinds: string[]): Promise<void> {
  const api = new ApiClient(kc);
  try {
    await waitFor(
      async () => {
        const doc = await api.request<{
          definitions?: Record<
            string,
            { 'x-kubernetes-group-version-kind'?: { group: string; kind: string }[] }
          >;
        }>('GET', '/openapi/v2');
        const published = Object.values(doc.definitions ?? {}).flatMap(
          (d) => d['x-kubernetes-group-version-kind'] ?? [],
        );
        return kinds.every((kind) =>
          published.some((gvk) => gvk.group === group && gvk.kind === kind),
        );
      },
      {
        what: `${kinds.join(', ')} (${group}) in the API server's OpenAPI document`,
        timeoutMs: 30_000,
        intervalMs: 250,
      },
    );
  } finally {
    api.close();
  }
}

// ---- nothing pruned -----------------------------------------------------------------------------

/** Every field `applied` sets, as a path, that `stored` lacks or holds with another value. */
function missingFields(applied: unknown, stored: unknown, path: string): string[] {
  if (Array.isArray(applied)) {
    if (!Array.isArray(stored) || stored.length !== applied.length)
      return [`${path} (stored as ${JSON.stringify(stored)})`];
    return applied.flatMap((item, i) => missingFields(item, stored[i], `${path}[${i}]`));
  }
  if (typeof applied === 'object' && applied !== null) {
    if (typeof stored !== 'object' || stored === null)
      return [`${path} (stored as ${JSON.stringify(stored)})`];
    const record = stored as Record<string, unknown>;
    return Object.entries(applied).flatMap(([key, value]) =>
      key in record
        ? missingFields(value, record[key], `${path}.${key}`)
        : [`${path}.${key} (not stored)`],
    );
  }
  return applied === stored
    ? []
    : [`${path} (${JSON.stringify(applied)} stored as ${JSON.stringify(stored)})`];
}

/** A Secret's `stringData` as the server keeps it: base64 `data`. */
function asStored(
  manifest: KubernetesObject & {
    stringData?: Record<string, string>;
    data?: Record<string, string>;
  },
): object {
  if (manifest.kind !== 'Secret' || !manifest.stringData) return manifest;
  const { stringData, ...rest } = manifest;
  const encoded = Object.fromEntries(
    Object.entries(stringData).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
  );
  return { ...rest, data: { ...rest.data, ...encoded } };
}

/** For each manifest in `path`, the fields the stored object lost (objects losing none are left out). */
async function prunedFields(
  path: string,
  namespace: string,
): Promise<{ object: string; lost: string[] }[]> {
  const report: { object: string; lost: string[] }[] = [];
  for (const manifest of readManifests(path) as KubernetesObject[]) {
    const name = manifest.metadata?.name ?? '';
    const stored = await objects.read({
      apiVersion: manifest.apiVersion!,
      kind: manifest.kind!,
      metadata: { name, namespace },
    });
    const lost = missingFields(asStored(manifest), stored, '');
    if (lost.length > 0) report.push({ object: `${manifest.kind}/${name}`, lost });
  }
  return report;
}

// ---- promtool --------------------------------------------------------------------------------------

/**
 * Each `kubernetes_sd_configs` list swapped for a `file_sd_configs` one naming `targetsFile`, line by
 * line so everything else reaches promtool exactly as generated: Debian's promtool is built without
 * Kubernetes service discovery (the same substitution as test/unit/prometheus/promtool.test.ts).
 */
function withFileSD(yaml: string, targetsFile: string): { text: string; replaced: number } {
  const lines = yaml.split('\n');
  const out: string[] = [];
  let replaced = 0;
  for (let i = 0; i < lines.length; i++) {
    const match = /^( *)kubernetes_sd_configs:$/.exec(lines[i]!);
    if (match === null) {
      out.push(lines[i]!);
      continue;
    }
    const indent = match[1]!;
    out.push(`${indent}file_sd_configs:`, `${indent}- files:`, `${indent}  - ${targetsFile}`);
    replaced++;
    while (
      i + 1 < lines.length &&
      (lines[i + 1]!.startsWith(`${indent}- `) || lines[i + 1]!.startsWith(`${indent}  `))
    )
      i++;
  }
  return { text: out.join('\n'), replaced };
}

async function promtoolCheckConfig(yaml: string): Promise<KubectlRun & { replaced: number }> {
  const targetsFile = join(workDir, 'targets.json');
  writeFileSync(
    targetsFile,
    JSON.stringify([
      { targets: ['127.0.0.1:8080'], labels: { __meta_kubernetes_endpoint_port_name: 'web' } },
    ]),
  );
  const { text, replaced } = withFileSD(yaml, targetsFile);
  const file = join(workDir, 'prometheus.yaml');
  writeFileSync(file, text);
  const result = await runProgram('promtool', ['check', 'config', file]).catch((error: Error) => {
    throw new Error(
      `${error.message}: run \`npm run provision\` (installs Debian's prometheus package, which has promtool)`,
    );
  });
  return { ...result, replaced };
}

// ---- prometheus-operator's getting-started guide --------------------------------------------------

interface ScrapeJob {
  job_name: string;
  kubernetes_sd_configs?: { role?: string; namespaces?: { names?: string[] } }[];
  relabel_configs?: { source_labels?: string[]; regex?: string; action?: string }[];
}

describe("prometheus-operator's getting-started manifests", () => {
  const group = 'monitoring.coreos.com';
  let namespace: string;
  let applied: KubectlRun;
  let operator: TestOperator | undefined;
  let core: CoreV1Api;

  beforeAll(async () => {
    core = kc.makeApiClient(CoreV1Api);
    await installCrds(
      kc,
      readCrds(fileURLToPath(new URL('../../../crds/monitoring.coreos.com.yaml', import.meta.url))),
    );
    await publishedInOpenAPI(group, ['Prometheus', 'ServiceMonitor']);
    namespace = await uniqueNamespace(kc, 'compat-prom');
    applied = await kubectl(['apply', '-n', namespace, '-f', prometheusFixtures]);
    // Started after the apply, as for a user bringing existing manifests to the operator.
    operator = await runOperator({
      kubeConfig: kc,
      handlers: [PrometheusOperator],
      namespaces: [namespace],
    });
  }, 60_000);
  afterAll(async () => {
    await operator?.stop();
  });

  /** The generated configuration in the Prometheus's Secret, or undefined before it exists. */
  async function generatedConfig(): Promise<string | undefined> {
    try {
      const secret = await core.readNamespacedSecret({ namespace, name: 'prometheus-prometheus' });
      return gunzipSync(Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64')).toString(
        'utf8',
      );
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  test('kubectl apply with its default validation accepts them unmodified', () => {
    expect({ code: applied.code, stderr: applied.stderr }).toEqual({ code: 0, stderr: '' });
    expect(applied.stdout).toMatch(
      /prometheus\.monitoring\.coreos\.com\/prometheus (created|configured|unchanged)/,
    );
    expect(applied.stdout).toMatch(
      /servicemonitor\.monitoring\.coreos\.com\/example-app (created|configured|unchanged)/,
    );
  });

  test('every field they set is stored: nothing is pruned', async () => {
    expect(applied.code).toBe(0);
    expect(await prunedFields(prometheusFixtures, namespace)).toEqual([]);
  });

  test("the operator renders a scrape job for the ServiceMonitor's named port, and promtool accepts the configuration", async () => {
    const job = `serviceMonitor/${namespace}/example-app/0`;
    const yaml = await waitFor(
      async () => {
        const current = await generatedConfig();
        return current?.includes(`job_name: ${job}`) ? current : undefined;
      },
      { what: `a scrape job ${job} in Secret prometheus-prometheus` },
    );
    const config = load(yaml!) as { scrape_configs?: ScrapeJob[] };
    expect(config.scrape_configs?.map((j) => j.job_name)).toEqual([job]);
    const scrape = config.scrape_configs![0]!;
    expect(scrape.kubernetes_sd_configs).toEqual([
      expect.objectContaining({
        role: 'endpoints',
        namespaces: expect.objectContaining({ names: [namespace] }),
      }),
    ]);
    expect(scrape.relabel_configs).toContainEqual(
      expect.objectContaining({
        action: 'keep',
        source_labels: [
          '__meta_kubernetes_service_label_app',
          '__meta_kubernetes_service_labelpresent_app',
        ],
        regex: '(example-app);true',
      }),
    );
    expect(scrape.relabel_configs).toContainEqual(
      expect.objectContaining({
        action: 'keep',
        source_labels: ['__meta_kubernetes_endpoint_port_name'],
        regex: 'web',
      }),
    );

    const checked = await promtoolCheckConfig(yaml!);
    expect(checked.replaced).toBe(1);
    expect({ code: checked.code, output: checked.stdout + checked.stderr }).toEqual({
      code: 0,
      output: expect.stringContaining('SUCCESS'),
    });
  });

  test("the StatefulSet runs under the manifest's ServiceAccount with its resources, and without the admin API", async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    const set = await waitFor(
      () =>
        apps
          .readNamespacedStatefulSet({ namespace, name: 'prometheus-prometheus' })
          .catch((error: unknown) => {
            if (statusOf(error) === 404) return undefined;
            throw error;
          }),
      { what: 'StatefulSet prometheus-prometheus' },
    );
    const pod = set!.spec!.template.spec!;
    const prometheus = pod.containers.find((c) => c.name === 'prometheus')!;
    expect(pod.serviceAccountName).toBe('prometheus');
    expect(prometheus.resources?.requests).toEqual({ memory: '400Mi' });
    expect(prometheus.args ?? []).not.toContain('--web.enable-admin-api');
  });
});

// ---- coreos/etcd-operator's examples --------------------------------------------------------------

describe("etcd-operator's examples", () => {
  const group = 'etcd.database.coreos.com';

  beforeAll(async () => {
    await installEtcdCrds(kc);
    await publishedInOpenAPI(group, ['EtcdCluster', 'EtcdBackup', 'EtcdRestore']);
  }, 60_000);

  test('kubectl apply with its default validation accepts the clusters, backups and restore unmodified, and stores every field', async () => {
    // No operator serves this namespace: the restore would replace the cluster it names.
    const namespace = await uniqueNamespace(kc, 'compat-etcd-apply');
    const applied = await kubectl(['apply', '-n', namespace, '-f', etcdFixtures]);
    expect({ code: applied.code, stderr: applied.stderr }).toEqual({ code: 0, stderr: '' });
    expect(applied.stdout.trim().split('\n')).toHaveLength(readManifests(etcdFixtures).length);
    expect(await prunedFields(etcdFixtures, namespace)).toEqual([]);
  });

  describe('reconciled by the etcd operator', () => {
    let h: EtcdHarness;
    let s3: TestS3Server;
    beforeAll(async () => {
      s3 = await startS3Server(['etcd-backups']);
      h = await startEtcdOperator(kc, await uniqueNamespace(kc, 'compat-etcd'));
    }, 60_000);
    afterAll(async () => {
      await h?.stop();
      await s3?.stop();
    });

    test('the example cluster comes up with its 3 members healthy, and the one-shot S3 backup of it succeeds', async () => {
      const cluster = await kubectl([
        'apply',
        '-n',
        h.namespace,
        '-f',
        join(etcdFixtures, 'example-etcd-cluster.yaml'),
      ]);
      expect({ code: cluster.code, stderr: cluster.stderr }).toEqual({ code: 0, stderr: '' });
      await waitFor(
        async () => {
          const current = await readCluster(h, 'example-etcd-cluster');
          if (current.status?.phase !== 'Running' || current.status.size !== 3) return false;
          const members = await memberList(h, 'example-etcd-cluster').catch(() => []);
          return members.length === 3 && (await allHealthy(h, 'example-etcd-cluster'));
        },
        { what: 'example-etcd-cluster to run 3 healthy members', timeoutMs: 60_000 },
      );
      expect((await readCluster(h, 'example-etcd-cluster')).status?.currentVersion).toBe('3.4.23');

      // As upstream's backup guide has it: the credentials Secret and the backup, once the cluster runs.
      const manifest = readFileSync(join(etcdFixtures, 'backup-s3.yaml'), 'utf8');
      expect(manifest).toContain(`endpoint: ${FIXTURE_S3_ENDPOINT}`);
      const backup = await kubectl(
        ['apply', '-n', h.namespace, '-f', join(etcdFixtures, 'aws-secret.yaml'), '-f', '-'],
        manifest.replace(`endpoint: ${FIXTURE_S3_ENDPOINT}`, `endpoint: ${s3.endpoint}`),
      );
      expect({ code: backup.code, stderr: backup.stderr }).toEqual({ code: 0, stderr: '' });

      const status = await waitFor(
        async () => {
          const s = await etcdStatus<{ succeeded?: boolean; Reason?: string }>(
            h,
            'etcdbackups',
            'example-etcd-cluster-backup',
          );
          return s?.succeeded === true || s?.Reason ? s : undefined;
        },
        { what: 'the one-shot backup to finish', timeoutMs: 30_000 },
      );
      expect(status).toMatchObject({ succeeded: true });
      const storage = new S3Storage({
        bucket: 'etcd-backups',
        endpoint: s3.endpoint,
        forcePathStyle: true,
        credentials: s3.credentials,
      });
      try {
        expect((await storage.list('example-etcd-cluster.backup')).map((o) => o.name)).toEqual([
          'example-etcd-cluster.backup',
        ]);
      } finally {
        storage.destroy();
      }
    }, 120_000);
  });
});
