// `konductor uninstall` deletes CRDs, so these specs run on a control plane of their own, with
// kube-controller-manager when it is provided (garbage collection of owned children, as in a cluster).
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { ApiError } from '../../../src/framework/api/api-error.js';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import {
  installCrds,
  readCrds,
  runOperator,
  TestControlPlane,
  type TestOperator,
} from '../../../src/testing/index.js';
import { resolveControllerManager } from '../../../src/testing/binaries.js';
import { WidgetChildren } from '../../fixtures/handlers/widget-children.js';
import { exitWithin, spawnKonductor, type Run } from '../../support/cli.js';
import { uniqueNamespace } from '../../support/cluster.js';
import {
  ETCD_API,
  allHealthy,
  memberList,
  readCluster,
  startEtcdOperator,
  type EtcdHarness,
} from '../../support/etcd.js';
import { startOperator } from '../../support/operators.js';
import { waitFor } from '../../support/wait-for.js';
import { Widgets } from '../../support/widgets.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const MINUTES = 300_000;
const ETCD_CRDS = ['etcdclusters', 'etcdbackups', 'etcdrestores'].map(
  (plural) => `${plural}.etcd.database.coreos.com`,
);
const MONITORING_CRDS = ['prometheuses', 'servicemonitors', 'podmonitors', 'prometheusrules'].map(
  (plural) => `${plural}.monitoring.coreos.com`,
);
const WIDGET_CRD = 'widgets.test.konductor.dev';

/** Whether kube-controller-manager is provided here (scripts/provision.sh with KONDUCTOR_WITH_CONTROLLER_MANAGER=1). */
function controllerManagerProvided(): boolean {
  try {
    resolveControllerManager();
    return true;
  } catch {
    return false;
  }
}

let plane: TestControlPlane;
let kc: KubeConfig;
let api: ApiClient;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // A busy machine (other suites start planes too) can take well over the default 30 s.
  plane = await TestControlPlane.start({
    controllerManager: controllerManagerProvided(),
    startTimeoutMs: 120_000,
  });
  kc = plane.kubeConfig();
  api = new ApiClient(kc);
  await installCrds(kc, [
    ...readCrds(`${root}/crds`),
    ...readCrds(`${root}/test/fixtures/widgets-crd.yaml`),
  ]);
}, 300_000);

afterEach(() => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

afterAll(async () => {
  api?.close();
  await plane?.stop();
});

/** Runs `konductor <command> <args>` against the plane, as a user would; resolves once it exited. */
async function konductor(
  command: 'uninstall' | 'disconnect',
  args: string[],
): Promise<{ run: Run; code: number | string }> {
  const run = spawnKonductor(
    'bin/konductor.mjs',
    [command, ...args, '--kubeconfig', plane.kubeconfigPath],
    { cwd: root },
  );
  children.push(run.child);
  return { run, code: await exitWithin(run, MINUTES) };
}

async function exists(path: string): Promise<boolean> {
  try {
    await api.request('GET', path);
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return false;
    throw error;
  }
}

async function names(path: string): Promise<string[]> {
  const list = await api.request<{ items: { metadata: { name: string } }[] }>('GET', path);
  return list.items.map((item) => item.metadata.name).sort();
}

async function create(path: string, body: Record<string, unknown>): Promise<void> {
  await api.request('POST', path, { body });
}

describe('konductor uninstall', () => {
  test(
    'with the bundled operators running: every EtcdCluster, EtcdBackup, EtcdRestore, Prometheus and ServiceMonitor and every child is gone, then the CRDs',
    async () => {
      const namespace = await uniqueNamespace(kc, 'uninstall');
      const etcdPath = (plural: string): string =>
        `/apis/${ETCD_API}/namespaces/${namespace}/${plural}`;
      const monitoringPath = (plural: string): string =>
        `/apis/monitoring.coreos.com/v1/namespaces/${namespace}/${plural}`;
      let etcd: EtcdHarness | undefined;
      let prometheus: TestOperator | undefined;
      try {
        etcd = await startEtcdOperator(kc, namespace);
        prometheus = await runOperator({
          kubeConfig: kc,
          handlers: [PrometheusOperator],
          namespaces: [namespace],
        });
        const h = etcd;
        await create(etcdPath('etcdclusters'), {
          apiVersion: ETCD_API,
          kind: 'EtcdCluster',
          metadata: { name: 'main' },
          spec: { size: 1 },
        });
        await waitFor(
          async () =>
            (await readCluster(h, 'main')).status?.phase === 'Running' &&
            (await memberList(h, 'main').catch(() => [])).length === 1 &&
            (await allHealthy(h, 'main')),
          {
            what: 'the etcd cluster to run',
            timeoutMs: 120_000,
          },
        );
        await create(etcdPath('etcdbackups'), {
          apiVersion: ETCD_API,
          kind: 'EtcdBackup',
          metadata: { name: 'once' },
          spec: {
            etcdEndpoints: ['http://main-client:2379'],
            storageType: 'Local',
            local: { path: 'once/main.db' },
          },
        });
        await waitFor(
          async () =>
            (
              await api.request<{ status?: { succeeded?: boolean } }>(
                'GET',
                `${etcdPath('etcdbackups')}/once`,
              )
            ).status?.succeeded === true,
          { what: 'the backup', timeoutMs: 60_000 },
        );
        await create(etcdPath('etcdrestores'), {
          apiVersion: ETCD_API,
          kind: 'EtcdRestore',
          metadata: { name: 'main' },
          spec: {
            etcdCluster: { name: 'main' },
            backupStorageType: 'Local',
            local: { path: 'once/main.db' },
          },
        });
        await waitFor(
          async () =>
            (
              await api.request<{ status?: { succeeded?: boolean } }>(
                'GET',
                `${etcdPath('etcdrestores')}/main`,
              )
            ).status?.succeeded === true,
          { what: 'the restore', timeoutMs: 120_000 },
        );
        await create(monitoringPath('prometheuses'), {
          apiVersion: 'monitoring.coreos.com/v1',
          kind: 'Prometheus',
          metadata: { name: 'main' },
          spec: { serviceMonitorSelector: {} },
        });
        await create(monitoringPath('servicemonitors'), {
          apiVersion: 'monitoring.coreos.com/v1',
          kind: 'ServiceMonitor',
          metadata: { name: 'api', labels: { team: 'a' } },
          spec: { selector: { matchLabels: { app: 'api' } }, endpoints: [{ port: 'metrics' }] },
        });
        await waitFor(
          async () =>
            (await exists(`/apis/apps/v1/namespaces/${namespace}/statefulsets/prometheus-main`)) &&
            (await exists(`/api/v1/namespaces/${namespace}/secrets/prometheus-main`)),
          {
            what: "the Prometheus's StatefulSet and Secret",
            timeoutMs: 60_000,
          },
        );
        expect(await names(`/api/v1/namespaces/${namespace}/pods`)).not.toEqual([]);

        const crds = [...ETCD_CRDS, ...MONITORING_CRDS].flatMap((name) => ['--crd', name]);
        const { run, code } = await konductor('uninstall', [
          'src/handlers/etcd',
          'src/handlers/prometheus',
          '-n',
          namespace,
          '--lease-namespace',
          namespace,
          '--timeout',
          '3m',
          ...crds,
        ]);
        expect({ code, stderr: run.stderr() }).toEqual({ code: 0, stderr: '' });
        const out = run.stdout();
        // The bundled handlers hold only custom resources: what they read (Namespaces, Pods, StatefulSets) they only watch.
        expect(out).not.toMatch(/^skipped /m);
        expect(out).toMatch(/^all objects gone after \d+s$/m);
        for (const name of [...ETCD_CRDS, ...MONITORING_CRDS])
          expect(out).toMatch(
            new RegExp(`^deleted CustomResourceDefinition ${name.replace(/\./g, '\\.')}$`, 'm'),
          );

        for (const name of [...ETCD_CRDS, ...MONITORING_CRDS])
          expect(
            await exists(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`),
          ).toBe(false);
        // Every child: the members' Pods and Services, the StatefulSet, its Secret, the governing Service.
        await waitFor(
          async () => (await names(`/api/v1/namespaces/${namespace}/pods`)).length === 0,
          { what: 'every Pod to be gone', timeoutMs: 30_000 },
        );
        expect(await names(`/api/v1/namespaces/${namespace}/services`)).toEqual([]);
        expect(await names(`/apis/apps/v1/namespaces/${namespace}/statefulsets`)).toEqual([]);
        expect(
          (await names(`/api/v1/namespaces/${namespace}/secrets`)).filter(
            (name) => !name.startsWith('default-token-'),
          ),
        ).toEqual([]);
        expect(
          (await names(`/api/v1/namespaces/${namespace}/configmaps`)).filter(
            (name) => name !== 'kube-root-ca.crt',
          ),
        ).toEqual([]);
      } finally {
        await prometheus?.stop();
        await etcd?.stop();
      }
    },
    MINUTES * 2,
  );

  test(
    '--dry-run prints one line per object it would delete and the CRDs after them, and deletes nothing',
    async () => {
      const namespace = await uniqueNamespace(kc, 'uninstall-dry');
      await new Widgets(kc, namespace).createMany('w', 2);
      const { run, code } = await konductor('uninstall', [
        'test/fixtures/handlers/widget-children.ts',
        '-n',
        namespace,
        '--lease-namespace',
        namespace,
        '--crd',
        WIDGET_CRD,
        '--dry-run',
      ]);
      expect(code).toBe(0);
      expect(run.stdout().trim().split('\n').slice(1)).toEqual([
        `would delete widgets.test.konductor.dev ${namespace}/w-0`,
        `would delete widgets.test.konductor.dev ${namespace}/w-1`,
        `would delete CustomResourceDefinition ${WIDGET_CRD} once none of its objects is left`,
        'uninstall (dry run, nothing written): 2 objects to delete, 1 CRDs after them',
      ]);
      expect(await names(`/apis/test.konductor.dev/v1/namespaces/${namespace}/widgets`)).toEqual([
        'w-0',
        'w-1',
      ]);
      // Left behind, they would keep the CRD the next spec uninstalls (rightly: objects of it are left).
      for (const name of ['w-0', 'w-1'])
        await api.request(
          'DELETE',
          `/apis/test.konductor.dev/v1/namespaces/${namespace}/widgets/${name}`,
        );
    },
    MINUTES,
  );

  test(
    'with no operator running, it says which objects stay and why, and keeps their CRD; after konductor disconnect, everything goes',
    async () => {
      const namespace = await uniqueNamespace(kc, 'uninstall-stopped');
      const operator = await startOperator(kc, namespace, [WidgetChildren]);
      await new Widgets(kc, namespace).createMany('w', 3);
      await waitFor(
        async () =>
          (await names(`/api/v1/namespaces/${namespace}/configmaps`)).filter((name) =>
            name.startsWith('widget-'),
          ).length === 3,
        { what: 'three children' },
      );
      await waitFor(
        async () =>
          (
            await api.request<{ items: { metadata: { finalizers?: string[] } }[] }>(
              'GET',
              `/apis/test.konductor.dev/v1/namespaces/${namespace}/widgets`,
            )
          ).items.every((w) => (w.metadata.finalizers ?? []).includes('konductor.dev/finalizer')),
        { what: 'every widget to hold the finalizer' },
      );
      await operator.stop();
      const args = [
        'test/fixtures/handlers/widget-children.ts',
        '-n',
        namespace,
        '--lease-namespace',
        namespace,
      ];

      const stuck = await konductor('uninstall', [...args, '--timeout', '2', '--crd', WIDGET_CRD]);
      expect(stuck.code).toBe(1);
      const lines = stuck.run.stdout().trim().split('\n');
      expect(lines).toContain(
        `no operator running (no live Lease konductor-leader): objects holding konductor.dev/finalizer stay until it starts or konductor disconnect releases them`,
      );
      expect(lines).toContain(`waiting: 3 objects left (3 widgets.test.konductor.dev), 0s of 2s`);
      expect(lines).toContain('3 objects left after 2s:');
      for (const i of [0, 1, 2]) {
        expect(lines).toContain(
          `  widgets.test.konductor.dev ${namespace}/w-${i}: finalizer konductor.dev/finalizer held, no operator running: run konductor disconnect or start the operator`,
        );
      }
      expect(lines.at(-1)).toMatch(
        new RegExp(
          `^CustomResourceDefinition ${WIDGET_CRD.replace(/\./g, '\\.')} kept: objects of it are left \\(e\\.g\\. ${namespace}/w-\\d\\)`,
        ),
      );
      expect(
        await exists(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${WIDGET_CRD}`),
      ).toBe(true);

      const released = await konductor('disconnect', args);
      expect(released.code).toBe(0);
      const done = await konductor('uninstall', [...args, '--crd', WIDGET_CRD]);
      expect(done.code).toBe(0);
      expect(done.run.stdout()).toMatch(
        new RegExp(`^deleted CustomResourceDefinition ${WIDGET_CRD.replace(/\./g, '\\.')}$`, 'm'),
      );
      expect(
        await exists(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${WIDGET_CRD}`),
      ).toBe(false);
    },
    MINUTES,
  );
});
