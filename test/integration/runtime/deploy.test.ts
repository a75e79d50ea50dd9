import { fileURLToPath } from 'node:url';
import { AppsV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { discoverResource } from '../../../src/framework/api/discovery.js';
import { collectionPath } from '../../../src/framework/api/resource.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import {
  applyManifests,
  installCrds,
  kubeConfigForServiceAccount,
  readCrds,
  readManifests,
  runOperator,
  waitFor,
} from '../../../src/testing/index.js';
import { sharedKubeConfig, statusOf, uniqueNamespace } from '../../support/cluster.js';
import { memberLabels } from '../../../src/handlers/etcd/member-pod.js';
import { RESTORE_SEED_LABEL } from '../../../src/handlers/etcd/restore-annotations.js';
import {
  ETCD_API,
  createCluster,
  memberList,
  readCluster,
  startEtcdOperator,
} from '../../support/etcd.js';

const deployDir = fileURLToPath(new URL('../../../deploy/', import.meta.url));
const namespacedDir = fileURLToPath(new URL('../../../deploy/namespaced/', import.meta.url));
/** The namespace deploy/namespaced/ is written for; its README says to substitute yours. */
const PLACEHOLDER = 'team-a';

/** Every object in deploy/*.yaml, as written (what the API server receives from kubectl). */
function manifests(): KubeObject[] {
  return readManifests(deployDir);
}

async function apply(client: ApiClient, object: KubeObject, dryRun: boolean): Promise<void> {
  const resource = await discoverResource(client, {
    apiVersion: object.apiVersion ?? '',
    name: object.kind ?? '',
  });
  try {
    await client.request('POST', collectionPath(resource, object.metadata?.namespace), {
      body: object,
      query: { dryRun: dryRun ? 'All' : undefined },
    });
  } catch (error) {
    if (statusOf(error) !== 409) throw error; // already there: fine for these tests
  }
}

/** deploy/namespaced/ for `namespace`, substituted as its README does with sed. */
function namespacedManifests(namespace: string): KubeObject[] {
  return readManifests(namespacedDir).map(
    (object) => JSON.parse(JSON.stringify(object).replaceAll(PLACEHOLDER, namespace)) as KubeObject,
  );
}

function findObject(
  objects: readonly KubeObject[],
  kind: string,
): KubeObject & { spec?: Record<string, unknown> } {
  const found = objects.find((o) => o.kind === kind);
  if (!found) throw new Error(`no ${kind} among the manifests`);
  return found as KubeObject & { spec?: Record<string, unknown> };
}

interface PolicyPeer {
  namespaceSelector?: Record<string, unknown>;
  podSelector?: {
    matchLabels?: Record<string, string>;
    matchExpressions?: Array<{ key: string; operator: string }>;
  };
}
interface PolicyRule {
  from?: PolicyPeer[];
  ports: Array<{ protocol: string; port: number }>;
}

/** The operator Pod's labels and container ports, from a Deployment manifest. */
function operatorPod(deployment: KubeObject): {
  labels: Record<string, string>;
  ports: Record<string, number>;
} {
  const template = (
    deployment.spec as {
      template: {
        metadata: { labels: Record<string, string> };
        spec: { containers: Array<{ ports: Array<{ name: string; containerPort: number }> }> };
      };
    }
  ).template;
  const ports = Object.fromEntries(
    template.spec.containers.flatMap((c) => c.ports).map((p) => [p.name, p.containerPort]),
  );
  return { labels: template.metadata.labels, ports };
}

/** Whether a label selector's matchLabels and Exists requirements hold for `labels`. */
function selects(selector: PolicyPeer['podSelector'], labels: Record<string, string>): boolean {
  const exact = Object.entries(selector?.matchLabels ?? {}).every(
    ([key, value]) => labels[key] === value,
  );
  const exists = (selector?.matchExpressions ?? []).every(
    (req) => req.operator === 'Exists' && Object.hasOwn(labels, req.key),
  );
  return exact && exists;
}

/** The CRDs and every deploy/ object but the Deployment (no kubelet runs it here), as an admin would apply them. */
async function installDeployment(kc: KubeConfig): Promise<void> {
  await installCrds(kc, readCrds(fileURLToPath(new URL('../../../crds/', import.meta.url))));
  const admin = new ApiClient(kc);
  for (const object of manifests().filter((o) => o.kind !== 'Deployment'))
    await apply(admin, object, false);
  admin.close();
}

describe('the deploy/ manifests', () => {
  test('every manifest passes a server-side dry run', async () => {
    const client = new ApiClient(sharedKubeConfig());
    const objects = manifests();
    // Like `kubectl apply --dry-run=server`, namespaced objects need their namespace to exist.
    for (const object of objects.filter((o) => o.kind === 'Namespace'))
      await apply(client, object, false);
    const failures: string[] = [];
    for (const object of objects) {
      await apply(client, object, true).catch((error: unknown) =>
        failures.push(`${object.kind}/${object.metadata?.name}: ${String(error)}`),
      );
    }
    client.close();
    expect(objects.map((o) => o.kind)).toEqual(
      expect.arrayContaining([
        'Namespace',
        'CustomResourceDefinition',
        'ServiceAccount',
        'ClusterRole',
        'Role',
        'Deployment',
        'NetworkPolicy',
      ]),
    );
    expect(failures).toEqual([]);
  });

  test('the bundled Prometheus operator does all its work as the deploy ServiceAccount, holding its Lease', async () => {
    const kc = sharedKubeConfig();
    await installDeployment(kc);
    const namespace = await uniqueNamespace(kc, 'deploy-prom');
    await applyManifests(kc, [
      {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'Prometheus',
        metadata: { name: 'main', namespace },
        spec: { serviceMonitorSelector: {} },
      },
      {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: { name: 'app', namespace },
        spec: { selector: { matchLabels: { app: 'app' } }, endpoints: [{ port: 'metrics' }] },
      },
    ]);
    const asOperator = await kubeConfigForServiceAccount(kc, {
      namespace: 'konductor-system',
      name: 'konductor',
    });
    const denied: string[] = [];
    const running = await runOperator({
      kubeConfig: asOperator,
      handlers: [PrometheusOperator],
      leaderElection: {
        namespace: 'konductor-system',
        name: `deploy-check-${namespace}`,
        leaseDuration: 10,
        renewDeadline: 6,
        retryPeriod: 1,
      },
      onRequest: (method, path, status) => {
        if (status === 403) denied.push(`${method} ${path}`);
      },
    });
    try {
      const core = kc.makeApiClient(CoreV1Api);
      await waitFor(
        async () =>
          (await core
            .readNamespacedSecret({ namespace, name: 'prometheus-main' })
            .catch(() => undefined)) !== undefined,
        {
          what: 'the config Secret written as the operator',
        },
      );
      await waitFor(
        async () =>
          (await kc
            .makeApiClient(AppsV1Api)
            .readNamespacedStatefulSet({ namespace, name: 'prometheus-main' })
            .catch(() => undefined)) !== undefined,
        {
          what: 'the StatefulSet created as the operator',
        },
      );
      expect(denied).toEqual([]);
    } finally {
      await running.stop();
    }
  });

  test('the bundled etcd operator does all its work as the deploy ServiceAccount: a cluster forms and a backup is taken', async () => {
    const kc = sharedKubeConfig();
    await installDeployment(kc);
    const namespace = await uniqueNamespace(kc, 'deploy-etcd');
    const asOperator = await kubeConfigForServiceAccount(kc, {
      namespace: 'konductor-system',
      name: 'konductor',
    });
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
          return (
            cluster.status?.phase === 'Running' &&
            (await memberList(h, 'solo').catch(() => [])).length === 1
          );
        },
        { what: 'a 1-member cluster made as the operator', timeoutMs: 90_000 },
      );
      await h.api.request('POST', `/apis/${ETCD_API}/namespaces/${namespace}/etcdbackups`, {
        body: {
          apiVersion: ETCD_API,
          kind: 'EtcdBackup',
          metadata: { name: 'once' },
          spec: {
            etcdEndpoints: ['http://solo-client:2379'],
            storageType: 'Local',
            local: { path: 'deploy-check/solo.db' },
          },
        },
      });
      await waitFor(
        async () =>
          (
            await h.api.request<{ status?: { succeeded?: boolean } }>(
              'GET',
              `/apis/${ETCD_API}/namespaces/${namespace}/etcdbackups/once`,
            )
          ).status?.succeeded === true,
        { what: 'a one-shot backup taken as the operator', timeoutMs: 60_000 },
      );
      expect(denied).toEqual([]);
    } finally {
      await h.stop();
    }
  }, 180_000);

  test('the operator identity can post Events and hold its Lease, and is denied what it was not granted', async () => {
    await installDeployment(sharedKubeConfig());
    const operator = new ApiClient(
      await kubeConfigForServiceAccount(sharedKubeConfig(), {
        namespace: 'konductor-system',
        name: 'konductor',
      }),
    );
    try {
      await operator.request('POST', '/api/v1/namespaces/default/events', {
        body: {
          metadata: { generateName: 'rbac-check.' },
          involvedObject: { kind: 'Pod', name: 'x', namespace: 'default' },
          reason: 'Check',
          message: 'ok',
          type: 'Normal',
        },
      });
      await operator
        .request('POST', '/apis/coordination.k8s.io/v1/namespaces/konductor-system/leases', {
          body: { metadata: { name: 'rbac-check' }, spec: { holderIdentity: 'test' } },
        })
        .catch((error: unknown) => {
          if (statusOf(error) !== 409) throw error;
        });
      const secrets = await operator
        .request('GET', '/api/v1/namespaces/default/secrets')
        .catch((error: unknown) => statusOf(error));
      const otherLeases = await operator
        .request('GET', '/apis/coordination.k8s.io/v1/namespaces/default/leases')
        .catch((error: unknown) => statusOf(error));
      expect(secrets).toBe(403);
      expect(otherLeases).toBe(403);
    } finally {
      operator.close();
    }
  });
});

describe('the Deployments', () => {
  it.each([
    ['deploy/', (): KubeObject[] => manifests()],
    ['deploy/namespaced/', (): KubeObject[] => namespacedManifests(PLACEHOLDER)],
  ] as const)(
    '%s: handler attempts are capped, and /healthz fails only after a stall longer than that cap',
    (_dir, read) => {
      const deployment = findObject(read(), 'Deployment');
      const args = (
        deployment.spec as { template: { spec: { containers: Array<{ args: string[] }> } } }
      ).template.spec.containers[0]!.args;
      const seconds = (flag: string): number => Number(args[args.indexOf(flag) + 1]);

      expect(seconds('--handler-timeout')).toBe(600);
      expect(seconds('--stall-timeout')).toBeGreaterThan(seconds('--handler-timeout'));
    },
  );
});

describe('the NetworkPolicy', () => {
  // No CNI runs on the test control plane, so the policy is not enforced here: the dry runs prove the
  // API server accepts it, and these tests that it admits only what it should.
  it.each([
    ['deploy/', (): KubeObject[] => manifests(), true],
    ['deploy/namespaced/', (): KubeObject[] => namespacedManifests(PLACEHOLDER), false],
  ] as const)(
    '%s: the operator Pod takes only the restore port from restore seed Pods, the health port from the cluster and (deploy/) the webhook port from anywhere',
    (_dir, read, anyNamespace) => {
      const objects = read();
      const policy = findObject(objects, 'NetworkPolicy');
      const pod = operatorPod(findObject(objects, 'Deployment'));
      const spec = policy.spec as {
        podSelector: PolicyPeer['podSelector'];
        policyTypes: string[];
        ingress: PolicyRule[];
      };
      expect(policy.metadata?.namespace).toBe(
        findObject(objects, 'Deployment').metadata?.namespace,
      );
      expect(selects(spec.podSelector, pod.labels)).toBe(true);
      expect(spec.policyTypes).toEqual(['Ingress']);
      // deploy/ serves admission webhooks; the API server calling them is not a Pod, so any source may reach 9443.
      const webhooks = anyNamespace ? [[{ protocol: 'TCP', port: pod.ports.webhooks }]] : [];
      expect(spec.ingress.map((rule) => rule.ports)).toEqual([
        [{ protocol: 'TCP', port: pod.ports.restore }],
        [{ protocol: 'TCP', port: pod.ports.health }],
        ...webhooks,
      ]);
      expect([pod.ports.restore, pod.ports.health]).toEqual([19999, 8080]);
      if (anyNamespace) {
        expect(pod.ports.webhooks).toBe(9443);
        expect(spec.ingress[2]!.from).toBeUndefined();
      }

      const [restore, health] = spec.ingress as [PolicyRule, PolicyRule];
      // Restore: a restore's seed Pods only, from any namespace or only its own; other members cannot.
      expect(restore.from).toHaveLength(1);
      expect(restore.from![0]!.namespaceSelector).toEqual(anyNamespace ? {} : undefined);
      expect(
        selects(restore.from![0]!.podSelector, {
          ...memberLabels('restored', 'restored-abc'),
          [RESTORE_SEED_LABEL]: 'true',
        }),
      ).toBe(true);
      expect(selects(restore.from![0]!.podSelector, memberLabels('restored', 'restored-abc'))).toBe(
        false,
      );
      expect(selects(restore.from![0]!.podSelector, { app: 'web' })).toBe(false);
      expect(selects(restore.from![0]!.podSelector, { app: 'etcd' })).toBe(false);
      // Health and metrics: any Pod in any namespace.
      expect(health.from).toEqual([{ namespaceSelector: {} }]);
    },
  );
});

describe('the namespaced install (deploy/namespaced/)', () => {
  /** CRDs (cluster admin, once), then deploy/namespaced/ but the Deployment, for a fresh namespace. */
  async function installNamespaced(kc: KubeConfig, prefix: string): Promise<string> {
    await installCrds(kc, readCrds(fileURLToPath(new URL('../../../crds/', import.meta.url))));
    const namespace = await uniqueNamespace(kc, prefix);
    const admin = new ApiClient(kc);
    for (const object of namespacedManifests(namespace).filter((o) => o.kind !== 'Deployment'))
      await apply(admin, object, false);
    admin.close();
    return namespace;
  }

  test('every manifest passes a server-side dry run; Roles grant it everything, the only ClusterRole reads Namespaces', async () => {
    const kc = sharedKubeConfig();
    const namespace = await uniqueNamespace(kc, 'ns-dry');
    const objects = namespacedManifests(namespace);
    const client = new ApiClient(kc);
    const failures: string[] = [];
    for (const object of objects) {
      await apply(client, object, true).catch((error: unknown) =>
        failures.push(`${object.kind}/${object.metadata?.name}: ${String(error)}`),
      );
    }
    client.close();
    expect(failures).toEqual([]);
    expect(objects.map((o) => o.kind).sort()).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'NetworkPolicy',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
    ]);
    expect(
      objects
        .filter((o) => o.metadata?.namespace !== undefined)
        .every((o) => o.metadata?.namespace === namespace),
    ).toBe(true);
    expect(findObject(objects, 'ClusterRole')).toMatchObject({
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }],
    });
    const args = (
      findObject(objects, 'Deployment').spec as {
        template: { spec: { containers: Array<{ args: string[] }> } };
      }
    ).template.spec.containers[0]!.args;
    expect(args).toEqual(expect.arrayContaining(['--namespace', '$(POD_NAMESPACE)']));
    expect(args).not.toContain('--all-namespaces');
  });

  test('the Prometheus and etcd operators serve their namespace as its ServiceAccount with 0 denied requests', async () => {
    const kc = sharedKubeConfig();
    const namespace = await installNamespaced(kc, 'ns-serve');
    await applyManifests(kc, [
      {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'Prometheus',
        metadata: { name: 'main', namespace },
        spec: { serviceMonitorSelector: {} },
      },
      {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: { name: 'app', namespace },
        spec: { selector: { matchLabels: { app: 'app' } }, endpoints: [{ port: 'metrics' }] },
      },
    ]);
    const asOperator = await kubeConfigForServiceAccount(kc, { namespace, name: 'konductor' });
    const denied: string[] = [];
    const onRequest = (method: string, path: string, status: number): void => {
      if (status === 403) denied.push(`${method} ${path}`);
    };
    const prometheus = await runOperator({
      kubeConfig: asOperator,
      handlers: [PrometheusOperator],
      namespaces: [namespace],
      leaderElection: {
        namespace,
        name: 'konductor',
        leaseDuration: 10,
        renewDeadline: 6,
        retryPeriod: 1,
      },
      onRequest,
    });
    try {
      const core = kc.makeApiClient(CoreV1Api);
      await waitFor(
        async () =>
          (await core
            .readNamespacedSecret({ namespace, name: 'prometheus-main' })
            .catch(() => undefined)) !== undefined,
        {
          what: 'the config Secret written by the namespaced operator',
        },
      );
      await waitFor(
        async () =>
          (await kc
            .makeApiClient(AppsV1Api)
            .readNamespacedStatefulSet({ namespace, name: 'prometheus-main' })
            .catch(() => undefined)) !== undefined,
        {
          what: 'the StatefulSet created by the namespaced operator',
        },
      );
    } finally {
      await prometheus.stop();
    }

    const etcd = await startEtcdOperator(kc, namespace, { as: asOperator, onRequest });
    try {
      await createCluster(etcd, 'solo', { size: 1 });
      await waitFor(
        async () =>
          (await readCluster(etcd, 'solo')).status?.phase === 'Running' &&
          (await memberList(etcd, 'solo').catch(() => [])).length === 1,
        { what: 'a 1-member cluster made by the namespaced operator', timeoutMs: 90_000 },
      );
      await etcd.api.request('POST', `/apis/${ETCD_API}/namespaces/${namespace}/etcdbackups`, {
        body: {
          apiVersion: ETCD_API,
          kind: 'EtcdBackup',
          metadata: { name: 'once' },
          spec: {
            etcdEndpoints: ['http://solo-client:2379'],
            storageType: 'Local',
            local: { path: 'ns-check/solo.db' },
          },
        },
      });
      await waitFor(
        async () =>
          (
            await etcd.api.request<{ status?: { succeeded?: boolean } }>(
              'GET',
              `/apis/${ETCD_API}/namespaces/${namespace}/etcdbackups/once`,
            )
          ).status?.succeeded === true,
        { what: 'a one-shot backup taken by the namespaced operator', timeoutMs: 60_000 },
      );
    } finally {
      await etcd.stop();
    }
    expect(denied).toEqual([]);
  }, 240_000);

  test('its ServiceAccount is refused everything outside its namespace', async () => {
    const kc = sharedKubeConfig();
    const namespace = await installNamespaced(kc, 'ns-own');
    const other = await uniqueNamespace(kc, 'ns-other');
    const operator = new ApiClient(
      await kubeConfigForServiceAccount(kc, { namespace, name: 'konductor' }),
    );
    const status = (method: string, path: string, body?: unknown): Promise<number | undefined> =>
      operator.request(method, path, body === undefined ? {} : { body }).then(
        () => 200,
        (error: unknown) => statusOf(error),
      );
    try {
      // Inside: what it works with (a Secret it may read, were it there).
      expect(await status('GET', `/api/v1/namespaces/${namespace}/secrets/absent`)).toBe(404);
      expect(await status('GET', `/apis/${ETCD_API}/namespaces/${namespace}/etcdclusters`)).toBe(
        200,
      );
      // Outside: every kind of object it handles, read or written, in another namespace or cluster-wide.
      const outside = {
        'read a Secret': await status('GET', `/api/v1/namespaces/${other}/secrets/absent`),
        'create a Pod': await status('POST', `/api/v1/namespaces/${other}/pods`, {
          metadata: { name: 'x' },
          spec: { containers: [{ name: 'x', image: 'x' }] },
        }),
        'create a Service': await status('POST', `/api/v1/namespaces/${other}/services`, {
          metadata: { name: 'x' },
          spec: { ports: [{ port: 1 }] },
        }),
        'list EtcdClusters': await status(
          'GET',
          `/apis/${ETCD_API}/namespaces/${other}/etcdclusters`,
        ),
        'list EtcdClusters cluster-wide': await status('GET', `/apis/${ETCD_API}/etcdclusters`),
        'list Prometheuses': await status(
          'GET',
          `/apis/monitoring.coreos.com/v1/namespaces/${other}/prometheuses`,
        ),
        'list ServiceMonitors cluster-wide': await status(
          'GET',
          '/apis/monitoring.coreos.com/v1/servicemonitors',
        ),
        'create a StatefulSet': await status(
          'POST',
          `/apis/apps/v1/namespaces/${other}/statefulsets`,
          { metadata: { name: 'x' } },
        ),
        'post an Event': await status('POST', `/api/v1/namespaces/${other}/events`, {
          metadata: { generateName: 'x.' },
          involvedObject: { kind: 'Pod', name: 'x', namespace: other },
          reason: 'X',
          message: 'x',
          type: 'Normal',
        }),
        'take a Lease': await status(
          'POST',
          `/apis/coordination.k8s.io/v1/namespaces/${other}/leases`,
          { metadata: { name: 'x' }, spec: {} },
        ),
        'list Secrets cluster-wide': await status('GET', '/api/v1/secrets'),
      };
      expect(outside).toEqual(Object.fromEntries(Object.keys(outside).map((what) => [what, 403])));
    } finally {
      operator.close();
    }
  });
});
