import { ApiError, events, type ApiClient, type KubeObject, type Logger } from 'konductor';
import { configSecret, CONFIG_KEY, GOVERNING_SERVICE, governingService, INPUT_HASH, secretName, statefulSet, statefulSetName } from './children.js';
import { generateConfig, gzipConfig, validatePrometheus } from './config.js';
import type { NamespaceInfo, PrometheusResource, ServiceMonitorResource } from './types.js';

const GROUP_PATH = '/apis/monitoring.coreos.com/v1';
const MERGE = 'application/merge-patch+json';

type Prometheus = PrometheusResource & KubeObject;
type ServiceMonitor = ServiceMonitorResource & KubeObject;

/** What a reconcile pass found, for the Prometheus object's status. */
export interface PrometheusStatus {
  paused: boolean;
  replicas: number;
  availableReplicas: number;
  selectedServiceMonitors: number;
  conditions: Array<{ type: string; status: 'True' | 'False'; reason: string; message: string; lastTransitionTime: string }>;
}

/** Everything a render needs, read once: all ServiceMonitors and namespaces. */
export interface Inputs {
  monitors: ServiceMonitor[];
  namespaces: NamespaceInfo[];
}

async function list<T extends KubeObject>(client: ApiClient, path: string, kind: string, apiVersion: string): Promise<T[]> {
  const result = await client.request<{ items?: T[] }>('GET', path);
  return (result.items ?? []).map((item) => ({ ...item, kind, apiVersion }));
}

export async function readInputs(client: ApiClient): Promise<Inputs> {
  const [monitors, namespaceObjects] = await Promise.all([
    list<ServiceMonitor>(client, `${GROUP_PATH}/servicemonitors`, 'ServiceMonitor', 'monitoring.coreos.com/v1'),
    list<KubeObject>(client, '/api/v1/namespaces', 'Namespace', 'v1'),
  ]);
  const namespaces = namespaceObjects.map((ns) => ({ name: ns.metadata?.name ?? '', labels: ns.metadata?.labels ?? {} }));
  return { monitors, namespaces };
}

export async function listPrometheuses(client: ApiClient): Promise<Prometheus[]> {
  return list<Prometheus>(client, `${GROUP_PATH}/prometheuses`, 'Prometheus', 'monitoring.coreos.com/v1');
}

async function read(client: ApiClient, path: string): Promise<KubeObject | undefined> {
  try {
    return await client.request<KubeObject>('GET', path);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
}

/**
 * Brings one Prometheus's children in line with its spec and the ServiceMonitors it selects: the
 * config Secret (written only when its bytes change), the governing Service, and the StatefulSet
 * (written only when the hash of its inputs changes). Invalid ServiceMonitors are skipped with an
 * Event on them; the rest still render.
 */
export async function reconcile(client: ApiClient, prometheus: Prometheus, inputs: Inputs, logger: Logger): Promise<PrometheusStatus> {
  const { name, namespace } = prometheus.metadata;
  const now = new Date().toISOString();
  if (prometheus.spec.paused) {
    return {
      paused: true,
      replicas: prometheus.spec.replicas ?? 1,
      availableReplicas: 0,
      selectedServiceMonitors: 0,
      conditions: [{ type: 'Reconciled', status: 'False', reason: 'Paused', message: 'spec.paused is true: nothing is reconciled', lastTransitionTime: now }],
    };
  }
  const problems = validatePrometheus(prometheus);
  if (problems.length > 0) {
    // A bad spec touches nothing: the running StatefulSet and its last good config stay as they are.
    const message = `invalid spec, nothing reconciled: ${problems.join('; ')}`;
    logger.warn(message);
    events.warn(prometheus, 'InvalidConfiguration', message);
    return {
      paused: false,
      replicas: prometheus.spec.replicas ?? 1,
      availableReplicas: 0,
      selectedServiceMonitors: 0,
      conditions: [{ type: 'Reconciled', status: 'False', reason: 'InvalidSpec', message, lastTransitionTime: now }],
    };
  }
  const rendered = generateConfig(prometheus, inputs.monitors, inputs.namespaces);
  // Jobs are `serviceMonitor/<namespace>/<name>/<endpoint>`: count the monitors that made it in.
  const selected = new Set(rendered.config.scrape_configs.map((job) => job.job_name.split('/').slice(1, 3).join('/'))).size;
  for (const skipped of rendered.skipped) {
    const monitor = inputs.monitors.find((m) => `${m.metadata.namespace}/${m.metadata.name}` === skipped.monitor);
    const message = `skipped by Prometheus ${namespace}/${name}: ${skipped.problems.join('; ')}`;
    logger.warn({ monitor: skipped.monitor }, message);
    if (monitor) events.warn(monitor, 'InvalidConfiguration', message);
  }

  // Config Secret: compare the bytes, write only on change.
  const secret = configSecret(prometheus, gzipConfig(rendered.yaml));
  const secretPath = `/api/v1/namespaces/${namespace}/secrets/${secretName(prometheus)}`;
  const currentSecret = await read(client, secretPath);
  const wanted = (secret.data as Record<string, string>)[CONFIG_KEY];
  if (!currentSecret) await client.request('POST', `/api/v1/namespaces/${namespace}/secrets`, { body: secret });
  else if ((currentSecret.data as Record<string, string> | undefined)?.[CONFIG_KEY] !== wanted) {
    await client.request('PATCH', secretPath, { body: { data: secret.data }, contentType: MERGE });
  }

  if (!(await read(client, `/api/v1/namespaces/${namespace}/services/${GOVERNING_SERVICE}`))) {
    await client.request('POST', `/api/v1/namespaces/${namespace}/services`, { body: governingService(namespace) }).catch((error: unknown) => {
      if (!(error instanceof ApiError && error.status === 409)) throw error; // another Prometheus made it first
    });
  }

  const set = statefulSet(prometheus);
  const setPath = `/apis/apps/v1/namespaces/${namespace}/statefulsets/${statefulSetName(prometheus)}`;
  const currentSet = await read(client, setPath);
  const hash = set.metadata?.annotations?.[INPUT_HASH];
  if (!currentSet) await client.request('POST', `/apis/apps/v1/namespaces/${namespace}/statefulsets`, { body: set });
  else if (currentSet.metadata?.annotations?.[INPUT_HASH] !== hash) {
    await client.request('PATCH', setPath, { body: { metadata: { annotations: { [INPUT_HASH]: hash } }, spec: set.spec }, contentType: MERGE });
  }
  const available = Number((currentSet?.status as { availableReplicas?: number } | undefined)?.availableReplicas ?? 0);
  const replicas = prometheus.spec.replicas ?? 1;
  return {
    paused: false,
    replicas,
    availableReplicas: available,
    selectedServiceMonitors: selected,
    conditions: [
      { type: 'Reconciled', status: 'True', reason: 'ConfigRendered', message: `${selected} ServiceMonitors, ${rendered.skipped.length} skipped`, lastTransitionTime: now },
      {
        type: 'Available',
        status: available >= replicas && replicas > 0 ? 'True' : 'False',
        reason: available >= replicas ? 'AllReplicasAvailable' : 'ReplicasNotAvailable',
        message: `${available} of ${replicas} replicas available`,
        lastTransitionTime: now,
      },
    ],
  };
}

/** Removes what a deleted Prometheus owned (owner references do the same where a garbage collector runs). */
export async function removeChildren(client: ApiClient, prometheus: Prometheus): Promise<void> {
  const { namespace } = prometheus.metadata;
  const paths = [
    `/apis/apps/v1/namespaces/${namespace}/statefulsets/${statefulSetName(prometheus)}`,
    `/api/v1/namespaces/${namespace}/secrets/${secretName(prometheus)}`,
  ];
  const others = (await listPrometheuses(client)).filter((p) => p.metadata.namespace === namespace && p.metadata.uid !== prometheus.metadata.uid);
  if (others.length === 0) paths.push(`/api/v1/namespaces/${namespace}/services/${GOVERNING_SERVICE}`);
  for (const path of paths) {
    await client.request('DELETE', path).catch((error: unknown) => {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    });
  }
}
