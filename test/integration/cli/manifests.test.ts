import { fileURLToPath } from 'node:url';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { loadHandlers } from '../../../src/cli/load-handlers.js';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { discoverResource } from '../../../src/framework/api/discovery.js';
import { collectionPath } from '../../../src/framework/api/resource.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import {
  applyManifests,
  kubeConfigForServiceAccount,
  runOperator,
} from '../../../src/testing/index.js';
import { exitWithin, spawnKonductor } from '../../support/cli.js';
import { sharedKubeConfig, statusOf, uniqueNamespace } from '../../support/cluster.js';
import { Widgets, installWidgetCrd, readWidget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
/** A user's operator: create, update and deletion handlers and a timer on Widgets. */
const handlers = 'test/fixtures/manifests/widget-operator.ts';
const crd = 'test/fixtures/widgets-crd.yaml';
const WIDGETS = '/apis/test.konductor.dev/v1';

/** `node bin/konductor.mjs manifests <args>` from the source tree, as a user types it; the printed objects. */
async function manifests(args: string[]): Promise<KubeObject[]> {
  const run = spawnKonductor('bin/konductor.mjs', ['manifests', handlers, '--crd', crd, ...args], {
    cwd: root,
  });
  const code = await exitWithin(run, 30_000);
  if (code !== 0) throw new Error(`konductor manifests exited with ${code}: ${run.stderr()}`);
  expect(run.stderr()).toBe('');
  return (loadAll(run.stdout()) as KubeObject[]).filter(Boolean);
}

/** The Lease name the printed Deployment runs with (`--lease-name`). */
function leaseNameOf(objects: readonly KubeObject[]): string {
  const deployment = objects.find((o) => o.kind === 'Deployment') as
    { spec: { template: { spec: { containers: Array<{ args: string[] }> } } } } | undefined;
  const args = deployment?.spec.template.spec.containers[0]?.args ?? [];
  const name = args[args.indexOf('--lease-name') + 1];
  if (!name) throw new Error('the Deployment names no --lease-name');
  return name;
}

/** What an admin applies: everything but the Deployment (no kubelet runs Pods on the test control plane). */
async function install(kc: KubeConfig, objects: readonly KubeObject[]): Promise<void> {
  await applyManifests(
    kc,
    objects.filter((o) => o.kind !== 'Deployment'),
  );
}

/** The status of one request made as the operator: 200, or the error's status (403 when denied). */
function statusAs(
  client: ApiClient,
): (method: string, path: string, body?: unknown) => Promise<number | undefined> {
  return (method, path, body) =>
    client.request(method, path, body === undefined ? {} : { body }).then(
      () => 200,
      (error: unknown) => statusOf(error),
    );
}

/**
 * Runs the handler file as the ServiceAccount, in `namespace`, through a create, a timer run, an
 * update and a deletion of a Widget, and returns the requests the API server refused.
 */
async function serveOneWidget(
  kc: KubeConfig,
  options: { account: { namespace: string; name: string }; namespace: string; leaseName: string },
): Promise<string[]> {
  const asOperator = await kubeConfigForServiceAccount(kc, options.account);
  const denied: string[] = [];
  const seen = new Set<string>();
  const running = await runOperator({
    kubeConfig: asOperator,
    registry: await loadHandlers([`${root}/${handlers}`]),
    // Only the test's namespace: other test files handle Widgets in theirs on the shared control plane.
    namespaces: [options.namespace],
    leaderElection: {
      namespace: options.account.namespace,
      name: options.leaseName,
      leaseDuration: 10,
      renewDeadline: 6,
      retryPeriod: 1,
    },
    onRequest: (method, path, status) => {
      if (status === 403) denied.push(`${method} ${path}`);
      seen.add(`${method} ${path.replace(/\?.*$/, '')}`);
    },
  });
  try {
    const widgets = new Widgets(kc, options.namespace);
    await widgets.create('w1', { size: 1 });
    await waitFor(
      async () => (await readWidget(options.namespace, 'w1'))?.status?.createdSize === 1,
      { what: 'the create handler ran as the ServiceAccount' },
    );
    await waitFor(
      async () => Number((await readWidget(options.namespace, 'w1'))?.status?.ticks ?? 0) >= 1,
      { what: 'the timer ran as the ServiceAccount' },
    );
    await widgets.patchSpec('w1', { size: 2 });
    await waitFor(
      async () => (await readWidget(options.namespace, 'w1'))?.status?.resizedTo === 2,
      { what: 'the update handler ran as the ServiceAccount' },
    );
    await widgets.delete('w1');
    await waitFor(async () => (await readWidget(options.namespace, 'w1')) === undefined, {
      what: 'the deletion handler ran and released the widget',
    });
    // Events are posted from a background queue: the deletion's may land just after the widget is gone.
    const core = kc.makeApiClient(CoreV1Api);
    await waitFor(
      async () => {
        const reasons = (
          await core.listNamespacedEvent({ namespace: options.namespace })
        ).items.map((e) => e.reason);
        return reasons.includes('WidgetCreated') && reasons.includes('WidgetDeleted');
      },
      { what: "the handlers' Events, posted as the ServiceAccount" },
    );
  } finally {
    await running.stop();
  }
  // The operator did write: status, the finalizer and Events, and held its Lease.
  const ns = encodeURIComponent(options.namespace);
  expect([...seen]).toEqual(
    expect.arrayContaining([
      `PATCH ${WIDGETS}/namespaces/${ns}/widgets/w1`,
      `PATCH ${WIDGETS}/namespaces/${ns}/widgets/w1/status`,
      `POST /api/v1/namespaces/${ns}/events`,
      `PUT /apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(options.account.namespace)}/leases/${options.leaseName}`,
    ]),
  );
  return denied;
}

let kc: KubeConfig;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
});

describe('konductor manifests', () => {
  test('every printed object passes a server-side dry run, the Namespace included', async () => {
    // A name no test creates: with --create-namespace the Namespace is printed, and a dry run creates nothing.
    const namespace = `manifests-dry-${Date.now().toString(36)}`;
    const objects = await manifests([
      '--name',
      namespace,
      '--create-namespace',
      '--rule',
      'apps/deployments=get,list,watch,create,patch',
    ]);
    expect(objects.map((o) => o.kind)).toEqual([
      'Namespace',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
      'Deployment',
    ]);
    const client = new ApiClient(kc);
    const failures: string[] = [];
    try {
      // Like `kubectl apply --dry-run=server`: namespaced objects need their namespace, so it is created for real.
      for (const object of objects) {
        const resource = await discoverResource(client, {
          apiVersion: object.apiVersion ?? '',
          name: object.kind ?? '',
        });
        const dryRun = object.kind === 'Namespace' ? undefined : 'All';
        await client
          .request('POST', collectionPath(resource, object.metadata?.namespace), {
            body: object,
            query: { dryRun },
          })
          .catch((error: unknown) =>
            failures.push(`${object.kind}/${object.metadata?.name}: ${String(error)}`),
          );
      }
    } finally {
      client.close();
    }
    expect(failures).toEqual([]);
  });

  test('cluster-wide: the operator handles a create, a timer, an update and a deletion as the printed ServiceAccount with 0 denied requests', async () => {
    const namespace = await uniqueNamespace(kc, 'manifests');
    // ClusterRoles are cluster-wide: a name per test namespace keeps test runs apart.
    const objects = await manifests(['--name', namespace, '--namespace', namespace]);
    await install(kc, objects);
    const denied = await serveOneWidget(kc, {
      account: { namespace, name: namespace },
      namespace,
      leaseName: leaseNameOf(objects),
    });
    expect(denied).toEqual([]);
  }, 90_000);

  test('namespace-scoped: the operator serves its watched namespace from another one with 0 denied requests', async () => {
    const operatorNamespace = await uniqueNamespace(kc, 'manifests-op');
    const served = await uniqueNamespace(kc, 'manifests-team');
    const objects = await manifests([
      '--name',
      'widgets-op',
      '--namespace',
      operatorNamespace,
      '--namespace-scoped',
      '--watch-namespace',
      served,
    ]);
    expect(objects.some((o) => o.kind?.startsWith('Cluster'))).toBe(false);
    await install(kc, objects);
    const denied = await serveOneWidget(kc, {
      account: { namespace: operatorNamespace, name: 'widgets-op' },
      namespace: served,
      leaseName: leaseNameOf(objects),
    });
    expect(denied).toEqual([]);
  }, 90_000);

  test('requests outside the derived and declared rules are denied (403)', async () => {
    const operatorNamespace = await uniqueNamespace(kc, 'manifests-deny');
    const served = await uniqueNamespace(kc, 'manifests-served');
    const other = await uniqueNamespace(kc, 'manifests-other');
    const objects = await manifests([
      '--name',
      'widgets-op',
      '--namespace',
      operatorNamespace,
      '--namespace-scoped',
      '--watch-namespace',
      served,
      '--rule',
      'configmaps=get',
    ]);
    await install(kc, objects);
    const operator = new ApiClient(
      await kubeConfigForServiceAccount(kc, { namespace: operatorNamespace, name: 'widgets-op' }),
    );
    const status = statusAs(operator);
    try {
      // Granted: what the handlers need, and the declared --rule (404: allowed, but not there).
      expect(await status('GET', `${WIDGETS}/namespaces/${served}/widgets`)).toBe(200);
      expect(await status('GET', `/api/v1/namespaces/${served}/configmaps/absent`)).toBe(404);
      const outside = {
        'create a ConfigMap (the rule grants get only)': await status(
          'POST',
          `/api/v1/namespaces/${served}/configmaps`,
          { metadata: { name: 'x' } },
        ),
        'read a Secret': await status('GET', `/api/v1/namespaces/${served}/secrets/absent`),
        'delete a Widget (the framework only patches)': await status(
          'DELETE',
          `${WIDGETS}/namespaces/${served}/widgets/absent`,
        ),
        'create a Widget': await status('POST', `${WIDGETS}/namespaces/${served}/widgets`, {
          apiVersion: 'test.konductor.dev/v1',
          kind: 'Widget',
          metadata: { name: 'x' },
        }),
        'list Widgets in another namespace': await status(
          'GET',
          `${WIDGETS}/namespaces/${other}/widgets`,
        ),
        'list Widgets cluster-wide': await status('GET', `${WIDGETS}/widgets`),
        'list Namespaces': await status('GET', '/api/v1/namespaces'),
        'read another Lease': await status(
          'GET',
          `/apis/coordination.k8s.io/v1/namespaces/${operatorNamespace}/leases/someone-else`,
        ),
        'post an Event in another namespace': await status(
          'POST',
          `/api/v1/namespaces/${other}/events`,
          {
            metadata: { generateName: 'x.' },
            involvedObject: { kind: 'Pod', name: 'x', namespace: other },
            reason: 'X',
            message: 'x',
            type: 'Normal',
          },
        ),
      };
      expect(outside).toEqual(Object.fromEntries(Object.keys(outside).map((what) => [what, 403])));
    } finally {
      operator.close();
    }
  });
});
