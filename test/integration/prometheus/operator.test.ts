import { request as httpsRequest, type RequestOptions } from 'node:https';
import { gunzipSync } from 'node:zlib';
import type {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  V1StatefulSet,
} from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, waitFor, type TestOperator } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { writesQuiet } from '../../support/operators.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';

let kc: KubeConfig;
let running: TestOperator;
let custom: CustomObjectsApi;
let core: CoreV1Api;
let apps: AppsV1Api;

beforeAll(async () => {
  ({ kc, custom, core, apps } = await monitoringPlane());
  running = await runOperator({ kubeConfig: kc, handlers: [PrometheusOperator] });
});
afterAll(async () => {
  await running?.stop();
});

function prometheus(
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
): Promise<unknown> {
  return custom.createNamespacedCustomObject({
    ...group,
    plural: 'prometheuses',
    namespace,
    body: { apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { name }, spec },
  });
}

function monitor(
  namespace: string,
  name: string,
  labels: Record<string, string>,
  spec: Record<string, unknown> = {},
): Promise<unknown> {
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
    const yaml = gunzipSync(
      Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64'),
    ).toString('utf8');
    return [...yaml.matchAll(/job_name: (\S+)/g)].map((m) => m[1]!).sort();
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

async function jobsBecome(namespace: string, name: string, expected: string[]): Promise<void> {
  await waitFor(
    async () =>
      JSON.stringify(await jobsOf(namespace, name)) === JSON.stringify([...expected].sort()),
    {
      what: `${namespace}/${name}'s jobs to be ${JSON.stringify(expected)} (now ${JSON.stringify(await jobsOf(namespace, name))})`,
    },
  );
}

/** The HTTP status of reading an object: 200, or the error's status (404 once it is gone). */
async function readStatus(read: () => Promise<unknown>): Promise<number | undefined> {
  return read().then(
    () => 200,
    (error: unknown) => statusOf(error),
  );
}

async function statefulSetOf(namespace: string, name: string): Promise<V1StatefulSet | undefined> {
  return apps
    .readNamespacedStatefulSet({ namespace, name: `prometheus-${name}` })
    .catch((error: unknown) => {
      if (statusOf(error) === 404) return undefined;
      throw error;
    });
}

interface Status {
  paused?: boolean;
  replicas?: number;
  availableReplicas?: number;
  selectedServiceMonitors?: number;
  conditions?: Array<{
    type: string;
    status: string;
    reason: string;
    message: string;
    lastTransitionTime: string;
  }>;
}

async function statusOfPrometheus(namespace: string, name: string): Promise<Status | undefined> {
  return (
    (await custom.getNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      name,
    })) as { status?: Status }
  ).status;
}

/**
 * The index the next recorded operator request will have, once the operator's writes so far are all
 * recorded (a Secret the spec saw change may have been written before its answer was recorded).
 */
async function mark(): Promise<number> {
  await writesQuiet(running.requests);
  return running.requests.length;
}

/**
 * Waits until a re-render after `since` has reconciled each given Prometheus: the ServiceMonitors come
 * from the cache (no request shows them read), so the sign is the render's own reads: the Secret, then
 * the StatefulSet. The test waited for the previous render's writes before taking `since`, so a pair
 * after it belongs to a render that saw the change.
 */
async function renderedSince(
  since: number,
  prometheuses: Array<[namespace: string, name: string]>,
): Promise<void> {
  await waitFor(
    () => {
      const later = running.requests.slice(since);
      return prometheuses.every(([namespace, name]) => {
        const secret = later.findIndex(
          (r) =>
            r.method === 'GET' &&
            r.path === `/api/v1/namespaces/${namespace}/secrets/prometheus-${name}`,
        );
        return (
          secret >= 0 &&
          later
            .slice(secret)
            .some(
              (r) =>
                r.method === 'GET' &&
                r.path === `/apis/apps/v1/namespaces/${namespace}/statefulsets/prometheus-${name}`,
            )
        );
      });
    },
    { what: `a re-render of ${prometheuses.map((p) => p.join('/')).join(', ')}` },
  );
}

/** The operator's writes (anything but GET) to a Prometheus's config Secret since `since`. */
function secretWritesSince(since: number, namespace: string, name: string): string[] {
  return running.requests
    .slice(since)
    .filter(
      (r) =>
        r.method !== 'GET' &&
        (r.path === `/api/v1/namespaces/${namespace}/secrets/prometheus-${name}` ||
          r.path === `/api/v1/namespaces/${namespace}/secrets`),
    )
    .map((r) => r.method);
}

describe('the Prometheus operator', () => {
  test('ServiceMonitors created, changed and deleted across two namespaces update exactly the right Prometheus Secrets', async () => {
    const first = await uniqueNamespace(kc, 'prom-a');
    const second = await uniqueNamespace(kc, 'prom-b');
    // `wide` selects team=a monitors in every namespace; `local` selects every monitor in its own namespace only.
    await prometheus(first, 'wide', {
      serviceMonitorSelector: { matchLabels: { team: 'a' } },
      serviceMonitorNamespaceSelector: {},
    });
    await prometheus(second, 'local', { serviceMonitorSelector: {} });
    await jobsBecome(first, 'wide', []);
    await jobsBecome(second, 'local', []);

    await monitor(second, 'checkout', { team: 'a' });
    await jobsBecome(first, 'wide', [`serviceMonitor/${second}/checkout/0`]);
    await jobsBecome(second, 'local', [`serviceMonitor/${second}/checkout/0`]);

    // A monitor neither selects: a full re-render, and no write to either Secret.
    // Marks are taken before each change, so the re-render it causes is always after them.
    let since = await mark();
    await monitor(first, 'billing', { team: 'b' });
    await renderedSince(since, [
      [first, 'wide'],
      [second, 'local'],
    ]);
    expect(secretWritesSince(since, first, 'wide')).toEqual([]);
    expect(secretWritesSince(since, second, 'local')).toEqual([]);

    // checkout leaves `wide` (team=c); `local` selects it regardless of labels: only wide's Secret is written.
    since = await mark();
    await custom.patchNamespacedCustomObject({
      ...group,
      plural: 'servicemonitors',
      namespace: second,
      name: 'checkout',
      body: [{ op: 'replace', path: '/metadata/labels/team', value: 'c' }],
    });
    await jobsBecome(first, 'wide', []);
    await renderedSince(since, [
      [first, 'wide'],
      [second, 'local'],
    ]);
    expect(await jobsOf(second, 'local')).toEqual([`serviceMonitor/${second}/checkout/0`]);
    expect(secretWritesSince(since, first, 'wide')).toEqual(['PATCH']);
    expect(secretWritesSince(since, second, 'local')).toEqual([]);

    // Deleting it changes only `local`.
    since = await mark();
    await custom.deleteNamespacedCustomObject({
      ...group,
      plural: 'servicemonitors',
      namespace: second,
      name: 'checkout',
    });
    await jobsBecome(second, 'local', []);
    await renderedSince(since, [
      [first, 'wide'],
      [second, 'local'],
    ]);
    expect(await jobsOf(first, 'wide')).toEqual([]);
    expect(secretWritesSince(since, second, 'local')).toEqual(['PATCH']);
    expect(secretWritesSince(since, first, 'wide')).toEqual([]);
  });

  test('a config change rewrites the Secret but never the StatefulSet, whose inputs did not change', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-sts');
    await prometheus(namespace, 'stable', { serviceMonitorSelector: {} });
    await waitFor(async () => (await jobsOf(namespace, 'stable')) !== undefined, {
      what: 'the config Secret',
    });
    await waitFor(
      () =>
        running.requests.some(
          (r) =>
            r.method === 'POST' && r.path === `/apis/apps/v1/namespaces/${namespace}/statefulsets`,
        ),
      { what: 'the StatefulSet' },
    );

    await monitor(namespace, 'one', {});
    await jobsBecome(namespace, 'stable', [`serviceMonitor/${namespace}/one/0`]);
    await monitor(namespace, 'two', {});
    await jobsBecome(namespace, 'stable', [
      `serviceMonitor/${namespace}/one/0`,
      `serviceMonitor/${namespace}/two/0`,
    ]);
    await new Promise((resolve) => setTimeout(resolve, 500));

    const setWrites = running.requests.filter(
      (r) => r.method !== 'GET' && r.path.includes(`/namespaces/${namespace}/statefulsets`),
    );
    const secretWrites = running.requests.filter(
      (r) => r.method !== 'GET' && r.path.includes(`/namespaces/${namespace}/secrets`),
    );
    expect(setWrites.map((r) => r.method)).toEqual(['POST']);
    expect(secretWrites.map((r) => r.method)).toEqual(['POST', 'PATCH', 'PATCH']);
  });

  test('an invalid ServiceMonitor gets an Event naming the problem, and the others still render', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-invalid');
    await prometheus(namespace, 'main', { serviceMonitorSelector: {} });
    await monitor(
      namespace,
      'broken',
      {},
      {
        endpoints: [{ port: 'metrics', relabelings: [{ action: 'explode', sourceLabels: ['x'] }] }],
      },
    );
    await monitor(namespace, 'fine', {});
    await jobsBecome(namespace, 'main', [`serviceMonitor/${namespace}/fine/0`]);
    const event = await waitFor(
      async () =>
        (
          await core.listNamespacedEvent({ namespace, fieldSelector: 'involvedObject.name=broken' })
        ).items.find((e) => e.reason === 'InvalidConfiguration'),
      { what: 'an InvalidConfiguration Event about broken' },
    );
    expect(event!.type).toBe('Warning');
    expect(event!.message).toContain('explode');
  });

  test('deleting a Prometheus removes its StatefulSet, Secret and (as the last one there) the governing Service', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-del');
    await prometheus(namespace, 'gone', { serviceMonitorSelector: {} });
    await waitFor(async () => (await jobsOf(namespace, 'gone')) !== undefined, {
      what: 'the config Secret',
    });
    await waitFor(async () => (await statefulSetOf(namespace, 'gone')) !== undefined, {
      what: 'the StatefulSet',
    });
    await waitFor(
      async () =>
        (await readStatus(() =>
          core.readNamespacedService({ namespace, name: 'prometheus-operated' }),
        )) === 200,
      {
        what: 'the governing Service',
      },
    );
    await custom.deleteNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      name: 'gone',
    });
    // No garbage collector runs here: these go because the operator deletes them.
    await waitFor(async () => (await statefulSetOf(namespace, 'gone')) === undefined, {
      what: 'the StatefulSet to be removed',
    });
    await waitFor(async () => (await jobsOf(namespace, 'gone')) === undefined, {
      what: 'the Secret to be removed',
    });
    await waitFor(
      async () =>
        (await readStatus(() =>
          core.readNamespacedService({ namespace, name: 'prometheus-operated' }),
        )) === 404,
      {
        what: 'the governing Service to be removed',
      },
    );
    await waitFor(
      async () =>
        (await readStatus(() =>
          custom.getNamespacedCustomObject({
            ...group,
            plural: 'prometheuses',
            namespace,
            name: 'gone',
          }),
        )) === 404,
      { what: 'the Prometheus object to be gone' },
    );
  });

  test('the governing Service stays while another Prometheus in the namespace still uses it', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-del2');
    await prometheus(namespace, 'first', { serviceMonitorSelector: {} });
    await prometheus(namespace, 'second', { serviceMonitorSelector: {} });
    await waitFor(
      async () =>
        (await statefulSetOf(namespace, 'first')) !== undefined &&
        (await statefulSetOf(namespace, 'second')) !== undefined,
      {
        what: 'both StatefulSets',
      },
    );
    await custom.deleteNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      name: 'first',
    });
    await waitFor(async () => (await statefulSetOf(namespace, 'first')) === undefined, {
      what: 'the first StatefulSet to be removed',
    });
    await waitFor(async () => (await jobsOf(namespace, 'first')) === undefined, {
      what: 'the first Secret to be removed',
    });
    expect(
      await readStatus(() =>
        core.readNamespacedService({ namespace, name: 'prometheus-operated' }),
      ),
    ).toBe(200);
    expect(await statefulSetOf(namespace, 'second')).toBeDefined();
  });

  test('status reports the desired and available replicas, the selected ServiceMonitors and conditions', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-status');
    await prometheus(namespace, 'counted', { serviceMonitorSelector: {}, replicas: 2 });
    const before = await waitFor(
      async () => {
        const status = await statusOfPrometheus(namespace, 'counted');
        return status?.conditions ? status : undefined;
      },
      { what: 'the status to be written' },
    );
    expect(before).toMatchObject({
      paused: false,
      replicas: 2,
      availableReplicas: 0,
      selectedServiceMonitors: 0,
    });
    expect(
      before!.conditions!.map(({ type, status, reason, message }) => ({
        type,
        status,
        reason,
        message,
      })),
    ).toEqual([
      {
        type: 'Reconciled',
        status: 'True',
        reason: 'ConfigRendered',
        message: '0 ServiceMonitors, 0 skipped',
      },
      {
        type: 'Available',
        status: 'False',
        reason: 'ReplicasNotAvailable',
        message: '0 of 2 replicas available',
      },
    ]);
    for (const condition of before!.conditions!)
      expect(Number.isNaN(Date.parse(condition.lastTransitionTime))).toBe(false);

    // No controller runs Pods here: report them ready as the StatefulSet controller would, then re-render.
    await apps.patchNamespacedStatefulSetStatus({
      namespace,
      name: 'prometheus-counted',
      body: [
        {
          op: 'add',
          path: '/status',
          value: { replicas: 2, readyReplicas: 2, availableReplicas: 2 },
        },
      ],
    });
    await monitor(namespace, 'api', {});
    const after = await waitFor(
      async () => {
        const status = await statusOfPrometheus(namespace, 'counted');
        return status?.selectedServiceMonitors === 1 && status.availableReplicas === 2
          ? status
          : undefined;
      },
      { what: 'the status to count the ready replicas and the ServiceMonitor' },
    );
    expect(
      after!.conditions!.map(({ type, status, reason }) => ({ type, status, reason })),
    ).toEqual([
      { type: 'Reconciled', status: 'True', reason: 'ConfigRendered' },
      { type: 'Available', status: 'True', reason: 'AllReplicasAvailable' },
    ]);
  });

  test('one Prometheus failing to render does not keep the others stale, and gets an Event saying why', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-isolated');
    // An immutable Secret of broken's own (its controller reference carries broken's uid; a foreign one
    // would be left alone) in the way: writing broken's configuration fails with 422 on every attempt.
    const { metadata } = (await prometheus(namespace, 'broken', {
      serviceMonitorSelector: {},
      paused: true,
    })) as { metadata: { uid: string } };
    const owner = {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'Prometheus',
      name: 'broken',
      uid: metadata.uid,
      controller: true,
    };
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'prometheus-broken', ownerReferences: [owner] },
        immutable: true,
        data: { 'prometheus.yaml.gz': Buffer.from('stale').toString('base64') },
      },
    });
    await custom.patchNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      name: 'broken',
      body: [{ op: 'replace', path: '/spec/paused', value: false }],
    });
    await waitFor(
      () =>
        running.requests.some(
          (r) =>
            r.method === 'PATCH' &&
            r.path === `/api/v1/namespaces/${namespace}/secrets/prometheus-broken` &&
            r.status === 422,
        ),
      {
        what: 'broken to have been tried',
      },
    );
    // Known after broken, so a pass that stopped at broken's failure would never reach it.
    await prometheus(namespace, 'healthy', { serviceMonitorSelector: {} });
    await jobsBecome(namespace, 'healthy', []);

    await monitor(namespace, 'api', {});
    await jobsBecome(namespace, 'healthy', [`serviceMonitor/${namespace}/api/0`]);
    const event = await waitFor(
      async () =>
        (
          await core.listNamespacedEvent({ namespace, fieldSelector: 'involvedObject.name=broken' })
        ).items.find((e) => e.reason === 'ConfigNotWritten'),
      { what: 'a ConfigNotWritten Event about broken' },
    );
    expect(event!.type).toBe('Warning');
    expect(event!.involvedObject.kind).toBe('Prometheus');
    expect(event!.message).toContain(`Prometheus ${namespace}/broken`);
    expect(event!.message).toContain('422');
    await custom.deleteNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      name: 'broken',
    }); // no failing re-renders for later tests
  });

  test('removing serviceAccountName from a Prometheus removes it from the StatefulSet', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-sa');
    await prometheus(namespace, 'main', {
      serviceMonitorSelector: {},
      serviceAccountName: 'prometheus',
    });
    await waitFor(
      async () =>
        (await statefulSetOf(namespace, 'main'))?.spec?.template.spec?.serviceAccountName ===
        'prometheus',
      {
        what: 'the StatefulSet to run as ServiceAccount prometheus',
      },
    );
    await custom.patchNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      name: 'main',
      body: [{ op: 'remove', path: '/spec/serviceAccountName' }],
    });
    const podSpec = await waitFor(
      async () => {
        const spec = (await statefulSetOf(namespace, 'main'))?.spec?.template.spec;
        return spec?.serviceAccountName === undefined ? spec : undefined;
      },
      { what: 'serviceAccountName to be removed from the StatefulSet' },
    );
    expect(podSpec!.serviceAccount).toBeUndefined();
  });

  test("listing ServiceMonitors as kubectl does shows the first endpoint's port", async () => {
    const namespace = await uniqueNamespace(kc, 'prom-columns');
    await monitor(namespace, 'web', {}, { endpoints: [{ port: 'metrics' }, { port: 'admin' }] });
    // kubectl asks for a Table: the API server fills the printer columns from the CRD.
    const cluster = kc.getCurrentCluster()!;
    const options: RequestOptions = {
      method: 'GET',
      headers: { Accept: 'application/json;as=Table;g=meta.k8s.io;v=v1' },
    };
    await kc.applyToHTTPSOptions(options);
    const url = new URL(
      `${cluster.server}/apis/monitoring.coreos.com/v1/namespaces/${namespace}/servicemonitors?includeObject=None`,
    );
    const table = await new Promise<{
      columnDefinitions: Array<{ name: string }>;
      rows: Array<{ cells: unknown[] }>;
    }>((resolve, reject) => {
      httpsRequest(url, options, (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        response.on('end', () =>
          response.statusCode === 200
            ? resolve(JSON.parse(body))
            : reject(new Error(`${response.statusCode} ${body}`)),
        );
      })
        .on('error', reject)
        .end();
    });
    const column = table.columnDefinitions.findIndex((c) => c.name === 'Port');
    expect(column).toBeGreaterThan(0);
    expect(table.rows.map((row) => row.cells[column])).toEqual(['metrics']);
  });

  test('scrapeTimeout and filterRunning reach the configuration (the schema keeps them)', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-fields');
    await prometheus(namespace, 'main', {
      serviceMonitorSelector: {},
      scrapeInterval: '30s',
      scrapeTimeout: '10s',
    });
    await monitor(
      namespace,
      'all-phases',
      {},
      { endpoints: [{ port: 'metrics', filterRunning: false }] },
    );
    await jobsBecome(namespace, 'main', [`serviceMonitor/${namespace}/all-phases/0`]);
    const secret = await core.readNamespacedSecret({ namespace, name: 'prometheus-main' });
    const text = gunzipSync(
      Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64'),
    ).toString('utf8');
    expect(text).toContain('  scrape_timeout: 10s\n');
    expect(text).not.toContain('__meta_kubernetes_pod_phase');
  });

  test('a namespace gaining the selected label brings its ServiceMonitors into the configuration', async () => {
    const home = await uniqueNamespace(kc, 'prom-nssel');
    const team = await uniqueNamespace(kc, 'prom-team');
    await prometheus(home, 'main', {
      serviceMonitorSelector: {},
      serviceMonitorNamespaceSelector: { matchLabels: { [`watch-${home}`]: 'yes' } },
    });
    await monitor(team, 'api', {});
    await jobsBecome(home, 'main', []);

    await core.patchNamespace({
      name: team,
      body: [{ op: 'add', path: '/metadata/labels', value: { [`watch-${home}`]: 'yes' } }],
    });
    await jobsBecome(home, 'main', [`serviceMonitor/${team}/api/0`]);
  });

  test('a paused Prometheus is not reconciled: no children, and its status says paused', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-paused');
    await prometheus(namespace, 'held', { serviceMonitorSelector: {}, paused: true });
    const status = await waitFor(
      async () =>
        (
          (await custom.getNamespacedCustomObject({
            ...group,
            plural: 'prometheuses',
            namespace,
            name: 'held',
          })) as { status?: { paused?: boolean } }
        ).status,
      { what: 'the status to be written' },
    );
    expect(status!.paused).toBe(true);
    expect(await jobsOf(namespace, 'held')).toBeUndefined();
    expect(
      running.requests.some(
        (r) => r.method === 'POST' && r.path.includes(`/namespaces/${namespace}/statefulsets`),
      ),
    ).toBe(false);
  });
});
