/**
 * In a shared namespace, a Prometheus named after someone else's objects neither takes them over nor
 * deletes them: a child is the Prometheus's only when its controller owner reference carries the
 * Prometheus's uid. The foreign objects stay as they are, and a Warning Event on the Prometheus names them.
 */
import type {
  AppsV1Api,
  CoreV1Api,
  CoreV1Event,
  CustomObjectsApi,
  KubeConfig,
  V1ConfigMap,
  V1Secret,
} from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';

let kc: KubeConfig;
let core: CoreV1Api;
let apps: AppsV1Api;
let custom: CustomObjectsApi;
let running: TestOperator | undefined;

beforeAll(async () => {
  ({ kc, core, apps, custom } = await monitoringPlane());
  running = await runOperator({ kubeConfig: kc, handlers: [PrometheusOperator] });
});
afterAll(async () => {
  await running?.stop();
});

/** The parts of an object that show whether anyone wrote to it. */
const fingerprint = (object: V1ConfigMap | V1Secret): unknown => ({
  uid: object.metadata?.uid,
  resourceVersion: object.metadata?.resourceVersion,
  ownerReferences: object.metadata?.ownerReferences,
  data: object.data,
});

async function exists(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return true;
  } catch (error) {
    if (statusOf(error) === 404) return false;
    throw error;
  }
}

async function foreignChildWarnings(namespace: string): Promise<string[]> {
  const { items } = await core.listNamespacedEvent({
    namespace,
    fieldSelector: 'involvedObject.name=shared',
  });
  return items
    .filter((event: CoreV1Event) => event.type === 'Warning' && event.reason === 'ForeignChild')
    .map((event) => event.message ?? '');
}

describe('a Prometheus named after someone else’s objects', () => {
  test('leaves a foreign rule ConfigMap and config Secret of its children’s names untouched, also when deleted, and names them in a Warning', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-foreign');
    const configMap = await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: 'prometheus-shared-rulefiles-0' },
        data: { 'team.yaml': 'not rules' },
      },
    });
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'prometheus-shared' }, stringData: { password: 'hunter2' } },
    });
    const before = {
      configMap: fingerprint(configMap),
      secret: fingerprint(
        await core.readNamespacedSecret({ namespace, name: 'prometheus-shared' }),
      ),
    };

    await custom.createNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      body: {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'Prometheus',
        metadata: { name: 'shared' },
        spec: { serviceMonitorSelector: {}, ruleSelector: {} },
      },
    });
    // The StatefulSet comes after the rule ConfigMaps and the Secret: once it exists, the render has been past them.
    await waitFor(
      () => exists(() => apps.readNamespacedStatefulSet({ namespace, name: 'prometheus-shared' })),
      { what: 'the StatefulSet of shared' },
    );
    expect(
      fingerprint(
        await core.readNamespacedConfigMap({ namespace, name: 'prometheus-shared-rulefiles-0' }),
      ),
    ).toEqual(before.configMap);
    expect(
      fingerprint(await core.readNamespacedSecret({ namespace, name: 'prometheus-shared' })),
    ).toEqual(before.secret);
    await waitFor(async () => (await foreignChildWarnings(namespace)).length >= 2, {
      what: 'Warnings naming the foreign ConfigMap and Secret',
    });
    const warnings = (await foreignChildWarnings(namespace)).join('\n');
    expect(warnings).toContain(
      `ConfigMap ${namespace}/prometheus-shared-rulefiles-0 exists but is not controlled by Prometheus ${namespace}/shared`,
    );
    expect(warnings).toContain(
      `Secret ${namespace}/prometheus-shared exists but is not controlled by Prometheus ${namespace}/shared`,
    );

    await custom.deleteNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      name: 'shared',
    });
    await waitFor(
      async () =>
        !(await exists(() =>
          custom.getNamespacedCustomObject({
            ...group,
            plural: 'prometheuses',
            namespace,
            name: 'shared',
          }),
        )),
      { what: 'the Prometheus to be deleted' },
    );
    expect(
      await exists(() => apps.readNamespacedStatefulSet({ namespace, name: 'prometheus-shared' })),
    ).toBe(false);
    expect(
      fingerprint(await core.readNamespacedSecret({ namespace, name: 'prometheus-shared' })),
    ).toEqual(before.secret);
    expect(
      fingerprint(
        await core.readNamespacedConfigMap({ namespace, name: 'prometheus-shared-rulefiles-0' }),
      ),
    ).toEqual(before.configMap);
  }, 60_000);
});
