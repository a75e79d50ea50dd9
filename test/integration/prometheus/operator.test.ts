import { gunzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { installCrds, readCrds, runOperator, waitFor, type TestOperator } from '../../../src/testing/index.js';
import { sharedKubeConfig, statusOf, uniqueNamespace } from '../../support/cluster.js';

const crds = fileURLToPath(new URL('../../../crds/monitoring.coreos.com.yaml', import.meta.url));
const group = { group: 'monitoring.coreos.com', version: 'v1' };

let kc: KubeConfig;
let running: TestOperator;
let custom: CustomObjectsApi;
let core: CoreV1Api;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installCrds(kc, readCrds(crds));
  custom = kc.makeApiClient(CustomObjectsApi);
  core = kc.makeApiClient(CoreV1Api);
  running = await runOperator({ kubeConfig: kc, handlers: [PrometheusOperator] });
});
afterAll(async () => {
  await running?.stop();
});

function prometheus(namespace: string, name: string, spec: Record<string, unknown>): Promise<unknown> {
  return custom.createNamespacedCustomObject({ ...group, plural: 'prometheuses', namespace, body: { apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { name }, spec } });
}

function monitor(namespace: string, name: string, labels: Record<string, string>, spec: Record<string, unknown> = {}): Promise<unknown> {
  return custom.createNamespacedCustomObject({
    ...group,
    plural: 'servicemonitors',
    namespace,
    body: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { name, labels },
      spec: { selector: { matchLabels: { app: name } }, endpoints: [{ port: 'metrics' }], ...spec },
    },
  });
}

/** The job names in a Prometheus's generated configuration (from its Secret), or undefined before it exists. */
async function jobsOf(namespace: string, name: string): Promise<string[] | undefined> {
  try {
    const secret = await core.readNamespacedSecret({ namespace, name: `prometheus-${name}` });
    const yaml = gunzipSync(Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64')).toString('utf8');
    return [...yaml.matchAll(/job_name: (\S+)/g)].map((m) => m[1]!).sort();
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

async function jobsBecome(namespace: string, name: string, expected: string[]): Promise<void> {
  await waitFor(async () => JSON.stringify(await jobsOf(namespace, name)) === JSON.stringify([...expected].sort()), {
    what: `${namespace}/${name}'s jobs to be ${JSON.stringify(expected)} (now ${JSON.stringify(await jobsOf(namespace, name))})`,
  });
}

describe('the Prometheus operator', () => {
  test('ServiceMonitors created, changed and deleted across two namespaces update exactly the right Prometheus Secrets', async () => {
    const first = await uniqueNamespace(kc, 'prom-a');
    const second = await uniqueNamespace(kc, 'prom-b');
    // `wide` selects team=a monitors in every namespace; `local` selects every monitor in its own namespace only.
    await prometheus(first, 'wide', { serviceMonitorSelector: { matchLabels: { team: 'a' } }, serviceMonitorNamespaceSelector: {} });
    await prometheus(second, 'local', { serviceMonitorSelector: {} });
    await jobsBecome(first, 'wide', []);
    await jobsBecome(second, 'local', []);

    await monitor(second, 'checkout', { team: 'a' });
    await jobsBecome(first, 'wide', [`serviceMonitor/${second}/checkout/0`]);
    await jobsBecome(second, 'local', [`serviceMonitor/${second}/checkout/0`]);

    await monitor(first, 'billing', { team: 'b' }); // neither selects it
    await custom.patchNamespacedCustomObject(
      { ...group, plural: 'servicemonitors', namespace: second, name: 'checkout', body: [{ op: 'replace', path: '/metadata/labels/team', value: 'c' }] },
    );
    await jobsBecome(first, 'wide', []);
    await jobsBecome(second, 'local', [`serviceMonitor/${second}/checkout/0`]);

    await custom.deleteNamespacedCustomObject({ ...group, plural: 'servicemonitors', namespace: second, name: 'checkout' });
    await jobsBecome(second, 'local', []);
    expect(await jobsOf(first, 'wide')).toEqual([]);
  });

  test('a config change rewrites the Secret but never the StatefulSet, whose inputs did not change', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-sts');
    await prometheus(namespace, 'stable', { serviceMonitorSelector: {} });
    await waitFor(async () => (await jobsOf(namespace, 'stable')) !== undefined, { what: 'the config Secret' });
    await waitFor(() => running.requests.some((r) => r.method === 'POST' && r.path === `/apis/apps/v1/namespaces/${namespace}/statefulsets`), { what: 'the StatefulSet' });

    await monitor(namespace, 'one', {});
    await jobsBecome(namespace, 'stable', [`serviceMonitor/${namespace}/one/0`]);
    await monitor(namespace, 'two', {});
    await jobsBecome(namespace, 'stable', [`serviceMonitor/${namespace}/one/0`, `serviceMonitor/${namespace}/two/0`]);
    await new Promise((resolve) => setTimeout(resolve, 500));

    const setWrites = running.requests.filter((r) => r.method !== 'GET' && r.path.includes(`/namespaces/${namespace}/statefulsets`));
    const secretWrites = running.requests.filter((r) => r.method !== 'GET' && r.path.includes(`/namespaces/${namespace}/secrets`));
    expect(setWrites.map((r) => r.method)).toEqual(['POST']);
    expect(secretWrites.map((r) => r.method)).toEqual(['POST', 'PATCH', 'PATCH']);
  });

  test('an invalid ServiceMonitor gets an Event naming the problem, and the others still render', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-invalid');
    await prometheus(namespace, 'main', { serviceMonitorSelector: {} });
    await monitor(namespace, 'broken', {}, { endpoints: [{ port: 'metrics', relabelings: [{ action: 'explode', sourceLabels: ['x'] }] }] });
    await monitor(namespace, 'fine', {});
    await jobsBecome(namespace, 'main', [`serviceMonitor/${namespace}/fine/0`]);
    const event = await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace, fieldSelector: 'involvedObject.name=broken' })).items.find((e) => e.reason === 'InvalidConfiguration'),
      { what: 'an InvalidConfiguration Event about broken' },
    );
    expect(event!.type).toBe('Warning');
    expect(event!.message).toContain('explode');
  });

  test('deleting a Prometheus removes its StatefulSet, Secret and (as the last one there) the governing Service', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-del');
    await prometheus(namespace, 'gone', { serviceMonitorSelector: {} });
    await waitFor(async () => (await jobsOf(namespace, 'gone')) !== undefined, { what: 'the config Secret' });
    await custom.deleteNamespacedCustomObject({ ...group, plural: 'prometheuses', namespace, name: 'gone' });
    await waitFor(async () => (await jobsOf(namespace, 'gone')) === undefined, { what: 'the Secret to be removed' });
    const service = await core.readNamespacedService({ namespace, name: 'prometheus-operated' }).catch((error: unknown) => statusOf(error));
    expect(service).toBe(404);
    await waitFor(
      async () => (await custom.getNamespacedCustomObject({ ...group, plural: 'prometheuses', namespace, name: 'gone' }).catch((error: unknown) => statusOf(error))) === 404,
      { what: 'the Prometheus object to be gone' },
    );
  });

  test('a namespace gaining the selected label brings its ServiceMonitors into the configuration', async () => {
    const home = await uniqueNamespace(kc, 'prom-nssel');
    const team = await uniqueNamespace(kc, 'prom-team');
    await prometheus(home, 'main', { serviceMonitorSelector: {}, serviceMonitorNamespaceSelector: { matchLabels: { [`watch-${home}`]: 'yes' } } });
    await monitor(team, 'api', {});
    await jobsBecome(home, 'main', []);

    await core.patchNamespace(
      { name: team, body: [{ op: 'add', path: '/metadata/labels', value: { [`watch-${home}`]: 'yes' } }] },
    );
    await jobsBecome(home, 'main', [`serviceMonitor/${team}/api/0`]);
  });

  test('a paused Prometheus is not reconciled: no children, and its status says paused', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-paused');
    await prometheus(namespace, 'held', { serviceMonitorSelector: {}, paused: true });
    const status = await waitFor(
      async () =>
        ((await custom.getNamespacedCustomObject({ ...group, plural: 'prometheuses', namespace, name: 'held' })) as { status?: { paused?: boolean } })
          .status,
      { what: 'the status to be written' },
    );
    expect(status!.paused).toBe(true);
    expect(await jobsOf(namespace, 'held')).toBeUndefined();
    expect(running.requests.some((r) => r.method === 'POST' && r.path.includes(`/namespaces/${namespace}/statefulsets`))).toBe(false);
  });
});
