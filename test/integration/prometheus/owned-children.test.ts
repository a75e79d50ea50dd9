/**
 * A Prometheus's StatefulSet is the operator's: edited or deleted by hand, it is put back (the
 * operator re-renders its Prometheus when the owned StatefulSet changes). Config Secrets are not
 * watched, so the operator needs no list/watch on Secrets (the deploy/ RBAC spec denies that).
 */
import {
  CustomObjectsApi,
  type AppsV1Api,
  type CoreV1Api,
  type KubeConfig,
} from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';

let kc: KubeConfig;
let running: TestOperator | undefined;
let core: CoreV1Api;
let apps: AppsV1Api;
let namespace: string;

beforeAll(async () => {
  ({ kc, core, apps } = await monitoringPlane());
  running = await runOperator({ kubeConfig: kc, handlers: [PrometheusOperator] });
  namespace = await uniqueNamespace(kc, 'prom-owned');
  await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    ...group,
    plural: 'prometheuses',
    namespace,
    body: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'Prometheus',
      metadata: { name: 'main' },
      spec: { serviceMonitorSelector: {}, replicas: 2 },
    },
  });
  await waitFor(async () => (await configOf()) !== undefined && (await replicasOf()) === 2, {
    what: 'the Secret and StatefulSet of main',
  });
});
afterAll(async () => {
  await running?.stop();
});

/** The rendered configuration in the Secret, or undefined while it does not exist. */
async function configOf(): Promise<string | undefined> {
  try {
    return (await core.readNamespacedSecret({ namespace, name: 'prometheus-main' })).data?.[
      'prometheus.yaml.gz'
    ];
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

async function replicasOf(): Promise<number | undefined> {
  try {
    return (await apps.readNamespacedStatefulSet({ namespace, name: 'prometheus-main' })).spec
      ?.replicas;
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

describe('the children of a Prometheus', () => {
  test('StatefulSet replicas changed by hand are restored to the Prometheus spec', async () => {
    await apps.patchNamespacedStatefulSet({
      namespace,
      name: 'prometheus-main',
      body: [{ op: 'replace', path: '/spec/replicas', value: 5 }],
    });
    await waitFor(async () => (await replicasOf()) === 2, {
      what: 'the StatefulSet back at 2 replicas',
    });
  });

  test('a deleted StatefulSet is created again', async () => {
    await apps.deleteNamespacedStatefulSet({ namespace, name: 'prometheus-main' });
    await waitFor(async () => (await replicasOf()) === 2, {
      what: 'prometheus-main StatefulSet to be created again',
    });
  });
});
