import { fileURLToPath } from 'node:url';
import { AppsV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { discoverResource } from '../../../src/framework/api/discovery.js';
import { collectionPath } from '../../../src/framework/api/resource.js';
import type { KubeObject } from '../../../src/framework/watching/events.js';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { applyManifests, installCrds, kubeConfigForServiceAccount, readCrds, readManifests, runOperator, waitFor } from '../../../src/testing/index.js';
import { sharedKubeConfig, statusOf, uniqueNamespace } from '../../support/cluster.js';
import { ETCD_API, createCluster, memberList, readCluster, startEtcdOperator } from '../../support/etcd.js';

const deployDir = fileURLToPath(new URL('../../../deploy/', import.meta.url));

/** Every object in deploy/*.yaml, as written (what the API server receives from kubectl). */
function manifests(): KubeObject[] {
  return readManifests(deployDir);
}

async function apply(client: ApiClient, object: KubeObject, dryRun: boolean): Promise<void> {
  const resource = await discoverResource(client, { apiVersion: object.apiVersion ?? '', name: object.kind ?? '' });
  try {
    await client.request('POST', collectionPath(resource, object.metadata?.namespace), { body: object, query: { dryRun: dryRun ? 'All' : undefined } });
  } catch (error) {
    if (statusOf(error) !== 409) throw error; // already there: fine for these tests
  }
}

/** The CRDs and every deploy/ object but the Deployment (no kubelet runs it here), as an admin would apply them. */
async function installDeployment(kc: KubeConfig): Promise<void> {
  await installCrds(kc, readCrds(fileURLToPath(new URL('../../../crds/', import.meta.url))));
  const admin = new ApiClient(kc);
  for (const object of manifests().filter((o) => o.kind !== 'Deployment')) await apply(admin, object, false);
  admin.close();
}

describe('the deploy/ manifests', () => {
  test('every manifest passes a server-side dry run', async () => {
    const client = new ApiClient(sharedKubeConfig());
    const objects = manifests();
    // Like `kubectl apply --dry-run=server`, namespaced objects need their namespace to exist.
    for (const object of objects.filter((o) => o.kind === 'Namespace')) await apply(client, object, false);
    const failures: string[] = [];
    for (const object of objects) {
      await apply(client, object, true).catch((error: unknown) => failures.push(`${object.kind}/${object.metadata?.name}: ${String(error)}`));
    }
    client.close();
    expect(objects.map((o) => o.kind)).toEqual(expect.arrayContaining(['Namespace', 'CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'Role', 'Deployment']));
    expect(failures).toEqual([]);
  });

  test('the bundled Prometheus operator does all its work as the deploy ServiceAccount, holding its Lease', async () => {
    const kc = sharedKubeConfig();
    await installDeployment(kc);
    const namespace = await uniqueNamespace(kc, 'deploy-prom');
    await applyManifests(kc, [
      { apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { name: 'main', namespace }, spec: { serviceMonitorSelector: {} } },
      {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: { name: 'app', namespace },
        spec: { selector: { matchLabels: { app: 'app' } }, endpoints: [{ port: 'metrics' }] },
      },
    ]);
    const asOperator = await kubeConfigForServiceAccount(kc, { namespace: 'konductor-system', name: 'konductor' });
    const denied: string[] = [];
    const running = await runOperator({
      kubeConfig: asOperator,
      handlers: [PrometheusOperator],
      leaderElection: { namespace: 'konductor-system', name: `deploy-check-${namespace}`, leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 },
      onRequest: (method, path, status) => {
        if (status === 403) denied.push(`${method} ${path}`);
      },
    });
    try {
      const core = kc.makeApiClient(CoreV1Api);
      await waitFor(async () => (await core.readNamespacedSecret({ namespace, name: 'prometheus-main' }).catch(() => undefined)) !== undefined, {
        what: 'the config Secret written as the operator',
      });
      await waitFor(async () => (await kc.makeApiClient(AppsV1Api).readNamespacedStatefulSet({ namespace, name: 'prometheus-main' }).catch(() => undefined)) !== undefined, {
        what: 'the StatefulSet created as the operator',
      });
      expect(denied).toEqual([]);
    } finally {
      await running.stop();
    }
  });

  test('the bundled etcd operator does all its work as the deploy ServiceAccount: a cluster forms and a backup is taken', async () => {
    const kc = sharedKubeConfig();
    await installDeployment(kc);
    const namespace = await uniqueNamespace(kc, 'deploy-etcd');
    const asOperator = await kubeConfigForServiceAccount(kc, { namespace: 'konductor-system', name: 'konductor' });
    const denied: string[] = [];
    const h = await startEtcdOperator(kc, namespace, {
      as: asOperator,
      onRequest: (method, path, status) => {
        if (status === 403) denied.push(`${method} ${path}`);
      },
    });
    try {
      await createCluster(h, 'solo', { size: 1 });
      await waitFor(
        async () => {
          const cluster = await readCluster(h, 'solo');
          return cluster.status?.phase === 'Running' && (await memberList(h, 'solo').catch(() => [])).length === 1;
        },
        { what: 'a 1-member cluster made as the operator', timeoutMs: 90_000 },
      );
      await h.api.request('POST', `/apis/${ETCD_API}/namespaces/${namespace}/etcdbackups`, {
        body: { apiVersion: ETCD_API, kind: 'EtcdBackup', metadata: { name: 'once' }, spec: { etcdEndpoints: ['http://solo-client:2379'], storageType: 'Local', local: { path: 'deploy-check/solo.db' } } },
      });
      await waitFor(
        async () => (await h.api.request<{ status?: { succeeded?: boolean } }>('GET', `/apis/${ETCD_API}/namespaces/${namespace}/etcdbackups/once`)).status?.succeeded === true,
        { what: 'a one-shot backup taken as the operator', timeoutMs: 60_000 },
      );
      expect(denied).toEqual([]);
    } finally {
      await h.stop();
    }
  }, 180_000);

  test('the operator identity can post Events and hold its Lease, and is denied what it was not granted', async () => {
    await installDeployment(sharedKubeConfig());
    const operator = new ApiClient(await kubeConfigForServiceAccount(sharedKubeConfig(), { namespace: 'konductor-system', name: 'konductor' }));
    try {
      await operator.request('POST', '/api/v1/namespaces/default/events', {
        body: { metadata: { generateName: 'rbac-check.' }, involvedObject: { kind: 'Pod', name: 'x', namespace: 'default' }, reason: 'Check', message: 'ok', type: 'Normal' },
      });
      await operator
        .request('POST', '/apis/coordination.k8s.io/v1/namespaces/konductor-system/leases', {
          body: { metadata: { name: 'rbac-check' }, spec: { holderIdentity: 'test' } },
        })
        .catch((error: unknown) => {
          if (statusOf(error) !== 409) throw error;
        });
      const secrets = await operator.request('GET', '/api/v1/namespaces/default/secrets').catch((error: unknown) => statusOf(error));
      const otherLeases = await operator.request('GET', '/apis/coordination.k8s.io/v1/namespaces/default/leases').catch((error: unknown) => statusOf(error));
      expect(secrets).toBe(403);
      expect(otherLeases).toBe(403);
    } finally {
      operator.close();
    }
  });
});
