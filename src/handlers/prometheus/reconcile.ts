import { ApiError, events, type ApiClient, type KubeObject, type Logger } from 'konductor';
import {
  configSecret,
  CONFIG_KEY,
  GOVERNING_SERVICE,
  governingService,
  INPUT_HASH,
  ruleConfigMapName,
  ruleConfigMaps,
  ruleFilesGlob,
  secretName,
  statefulSet,
  statefulSetName,
  type StatefulSetOptions,
} from './children.js';
import { corePath, monitoringPath, MONITORING_PATH, statefulSetPath } from './api-paths.js';
import { generateConfig, gzipConfig, validatePrometheus } from './config.js';
import { ALL_GROUPS, ruleFiles, ruleKey, type PrometheusRuleResource, type RuleSelection } from './rules.js';
import type { LabelSelector, NamespaceInfo, PodMonitorResource, PrometheusResource, ServiceMonitorResource } from './types.js';

const MERGE = 'application/merge-patch+json';

type Prometheus = PrometheusResource & KubeObject;
type ServiceMonitor = ServiceMonitorResource & KubeObject;
type PodMonitor = PodMonitorResource & KubeObject;
type PrometheusRule = PrometheusRuleResource & KubeObject;

/** The namespace selectors of the kinds a Prometheus selects (typed here until every CRD version has them). */
interface NamespaceSelectors {
  serviceMonitorNamespaceSelector?: LabelSelector | null;
  podMonitorNamespaceSelector?: LabelSelector | null;
  ruleNamespaceSelector?: LabelSelector | null;
}

/** What a reconcile pass found, for the Prometheus object's status. */
export interface PrometheusStatus {
  paused: boolean;
  replicas: number;
  availableReplicas: number;
  selectedServiceMonitors: number;
  conditions: Array<{ type: string; status: 'True' | 'False'; reason: string; message: string; lastTransitionTime: string }>;
}

/** Everything a render needs, read once: the ServiceMonitors, PodMonitors, PrometheusRules and namespaces. */
export interface Inputs {
  monitors: ServiceMonitor[];
  podMonitors: PodMonitor[];
  rules: PrometheusRule[];
  namespaces: NamespaceInfo[];
  /** Whether every namespace was read, or only the namespaces of Prometheus objects that select just their own. */
  allNamespaces: boolean;
}

async function list<T extends KubeObject>(client: ApiClient, path: string, kind: string, apiVersion: string): Promise<T[]> {
  const result = await client.request<{ items?: T[] }>('GET', path);
  return (result.items ?? []).map((item) => ({ ...item, kind, apiVersion }));
}

/**
 * Lists a kind whose CRD a cluster may not have yet (PodMonitor, PrometheusRule were added after
 * the first CRD release): a 404 means none exist, so a cluster with the older CRDs still renders.
 */
async function listOptional<T extends KubeObject>(client: ApiClient, path: string, kind: string): Promise<T[]> {
  return list<T>(client, path, kind, 'monitoring.coreos.com/v1').catch((error: unknown) => {
    if (error instanceof ApiError && error.status === 404) return [];
    throw error;
  });
}

/** Which monitors and rules a Prometheus may select: only its own namespace's, or any namespace's. */
export interface InputScope {
  namespace: string;
  /** Every namespace selector (ServiceMonitor, PodMonitor, rule) is null/absent: only the Prometheus's own namespace counts. */
  ownNamespaceOnly: boolean;
}

/** The {@link InputScope} of one Prometheus. */
export function inputScope(prometheus: PrometheusResource): InputScope {
  const spec = prometheus.spec as NamespaceSelectors;
  const ownNamespaceOnly = spec.serviceMonitorNamespaceSelector == null && spec.podMonitorNamespaceSelector == null && spec.ruleNamespaceSelector == null;
  return { namespace: prometheus.metadata.namespace, ownNamespaceOnly };
}

/** ServiceMonitors, PodMonitors and PrometheusRules under one collection path (a namespace's, or the cluster's). */
async function listSelectable(client: ApiClient, collection: (plural: 'servicemonitors' | 'podmonitors' | 'prometheusrules') => string): Promise<Omit<Inputs, 'namespaces' | 'allNamespaces'>> {
  const [monitors, podMonitors, rules] = await Promise.all([
    list<ServiceMonitor>(client, collection('servicemonitors'), 'ServiceMonitor', 'monitoring.coreos.com/v1'),
    listOptional<PodMonitor>(client, collection('podmonitors'), 'PodMonitor'),
    listOptional<PrometheusRule>(client, collection('prometheusrules'), 'PrometheusRule'),
  ]);
  return { monitors, podMonitors, rules };
}

/**
 * Reads what rendering the given Prometheus objects needs. When each selects only its own
 * namespace (the default), ServiceMonitors, PodMonitors and PrometheusRules are listed in those
 * namespaces alone and Namespaces not at all, so an operator installed with namespaced Roles
 * (deploy/namespaced/) never asks for more than it may read; otherwise all of them and every
 * Namespace are listed.
 */
export async function readInputs(client: ApiClient, scopes: readonly InputScope[]): Promise<Inputs> {
  if (scopes.every((scope) => scope.ownNamespaceOnly)) {
    const namespaces = [...new Set(scopes.map((scope) => scope.namespace))];
    const lists = await Promise.all(namespaces.map((namespace) => listSelectable(client, (plural) => monitoringPath(namespace, plural))));
    return {
      monitors: lists.flatMap((l) => l.monitors),
      podMonitors: lists.flatMap((l) => l.podMonitors),
      rules: lists.flatMap((l) => l.rules),
      namespaces: [],
      allNamespaces: false,
    };
  }
  const [selectable, namespaceObjects] = await Promise.all([
    listSelectable(client, (plural) => `${MONITORING_PATH}/${plural}`),
    list<KubeObject>(client, '/api/v1/namespaces', 'Namespace', 'v1'),
  ]);
  const namespaces = namespaceObjects.map((ns) => ({ name: ns.metadata?.name ?? '', labels: ns.metadata?.labels ?? {} }));
  return { ...selectable, namespaces, allNamespaces: true };
}

export async function listPrometheuses(client: ApiClient): Promise<Prometheus[]> {
  return list<Prometheus>(client, `${MONITORING_PATH}/prometheuses`, 'Prometheus', 'monitoring.coreos.com/v1');
}

async function read(client: ApiClient, path: string): Promise<KubeObject | undefined> {
  try {
    return await client.request<KubeObject>('GET', path);
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
}

/** How {@link upsert} makes one child. */
interface Child {
  /** The object's path. */
  path: string;
  /** The collection it is created in. */
  collection: string;
  /** What to create. */
  body: KubeObject;
  /** What the child is called in errors: `Secret <ns>/<name>`. */
  what: string;
  /** Whether an existing object already is as wanted (then nothing is written). */
  upToDate(current: KubeObject): boolean;
  /** The merge patch bringing an existing object in line (it may depend on what exists). */
  patch: Record<string, unknown> | ((current: KubeObject) => Record<string, unknown>);
}

/**
 * Creates the child, or patches it when it exists and is not up to date. A 409 on create means
 * someone else (an earlier attempt whose answer was lost, a second operator) created it meanwhile:
 * it is then read and patched like any existing object. Returns the object as last seen.
 */
async function upsert(client: ApiClient, child: Child): Promise<KubeObject> {
  let current = await read(client, child.path);
  if (!current) {
    try {
      return await client.request<KubeObject>('POST', child.collection, { body: child.body });
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 409)) throw error;
    }
    current = await read(client, child.path);
    if (!current) throw new Error(`${child.what} was reported as existing but is gone; the next reconcile creates it again`);
  }
  if (child.upToDate(current)) return current;
  const patch = typeof child.patch === 'function' ? child.patch(current) : child.patch;
  return client.request<KubeObject>('PATCH', child.path, { body: patch, contentType: MERGE });
}

/**
 * The merge patch that makes an existing StatefulSet's spec the wanted one. A merge patch keeps keys
 * it does not mention, so optional keys the wanted spec leaves out are sent as null; the deprecated
 * `serviceAccount` too, since the API server would otherwise restore `serviceAccountName` from it.
 */
function statefulSetPatch(set: KubeObject): Record<string, unknown> {
  const spec = set.spec as { template: { spec: Record<string, unknown> } };
  const podSpec = { serviceAccountName: null, serviceAccount: null, ...spec.template.spec };
  return { metadata: { annotations: set.metadata?.annotations }, spec: { ...spec, template: { ...spec.template, spec: podSpec } } };
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A string map with its keys sorted, so two maps compare by content alone. */
function sortedMap(map: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Remembers the problems already reported, so each is one Warning Event per object generation
 * rather than one per re-render (a busy cluster re-renders on every monitor or rule change).
 */
export class ReportedProblems {
  private readonly seen = new Set<string>();

  /** True the first time `key` is seen. Bounded: past 10 000 keys it forgets them all (and reports again). */
  firstTime(key: string): boolean {
    if (this.seen.has(key)) return false;
    if (this.seen.size >= 10_000) this.seen.clear();
    this.seen.add(key);
    return true;
  }
}

/**
 * Renders the PrometheusRules a Prometheus selects into its rule files: a group Prometheus would
 * refuse is left out with one Warning Event on its PrometheusRule (per generation), the rest are
 * written to the rule ConfigMaps (only those whose data or labels differ). Returns the ConfigMaps'
 * names, none when `ruleSelector` is null.
 */
async function writeRuleConfigMaps(
  client: ApiClient,
  prometheus: Prometheus,
  inputs: Inputs,
  logger: Logger,
  reported: ReportedProblems,
): Promise<{ names: string[]; rules: number; refusedGroups: number }> {
  const { name, namespace, uid } = prometheus.metadata;
  if ((prometheus.spec as RuleSelection).ruleSelector == null) return { names: [], rules: 0, refusedGroups: 0 };
  const checked = ruleFiles(prometheus, inputs.rules, inputs.namespaces);
  let refusedGroups = 0;
  for (const file of checked) {
    const rule = file.rule;
    for (const refused of file.refused) {
      refusedGroups += 1;
      const message =
        refused.group === ALL_GROUPS
          ? `PrometheusRule ${ruleKey(rule)} is refused by Prometheus ${namespace}/${name}: ${refused.problems.join('; ')}`
          : `rule group ${JSON.stringify(refused.group)} of PrometheusRule ${ruleKey(rule)} is refused by Prometheus ${namespace}/${name} (its other groups still load): ${refused.problems.join('; ')}`;
      logger.warn({ rule: ruleKey(rule), group: refused.group }, message);
      if (reported.firstTime(`${uid}|${rule.metadata.uid}|${rule.metadata.generation}|${message}`)) events.warn(rule, 'InvalidRuleGroup', message);
    }
  }
  const files = new Map<string, string>();
  for (const file of checked) if (file.key !== undefined && file.content !== undefined) files.set(file.key, file.content);
  const configMaps = ruleConfigMaps(prometheus, files);
  for (const configMap of configMaps) {
    const configMapName = configMap.metadata?.name as string;
    const data = configMap.data as Record<string, string>;
    const labels = configMap.metadata?.labels as Record<string, string>;
    await upsert(client, {
      path: corePath(namespace, 'configmaps', configMapName),
      collection: corePath(namespace, 'configmaps'),
      body: configMap,
      what: `ConfigMap ${namespace}/${configMapName}`,
      upToDate: (current) =>
        sameJson(sortedMap(current.data as Record<string, string> | undefined), sortedMap(data)) &&
        Object.entries(labels).every(([key, value]) => current.metadata?.labels?.[key] === value),
      // A merge patch keeps keys it does not mention: files no longer wanted are sent as null.
      patch: (current) => ({
        metadata: { labels, ownerReferences: configMap.metadata?.ownerReferences },
        data: { ...Object.fromEntries(Object.keys((current.data as Record<string, string> | undefined) ?? {}).map((key) => [key, null])), ...data },
      }),
    });
  }
  return { names: configMaps.map((configMap) => configMap.metadata?.name as string), rules: checked.length, refusedGroups };
}

/**
 * Deletes the rule ConfigMaps past the wanted ones (`rulefiles-<wanted>` and up, which this
 * Prometheus owns), highest first, so what remains is always `0..n-1` and the next pass finds any
 * leftover by counting up. Called after the StatefulSet stops mounting them.
 */
async function deleteStaleRuleConfigMaps(client: ApiClient, prometheus: Prometheus, wanted: number): Promise<void> {
  const { namespace, uid } = prometheus.metadata;
  const stale: string[] = [];
  for (let index = wanted; ; index++) {
    const configMapName = ruleConfigMapName(prometheus, index);
    const current = await read(client, corePath(namespace, 'configmaps', configMapName));
    if (!current) break;
    // Someone else's ConfigMap of that name is left alone.
    const owners = (current.metadata?.ownerReferences ?? []) as Array<{ uid?: string }>;
    if (owners.some((owner) => owner.uid === uid)) stale.push(configMapName);
  }
  for (const configMapName of stale.reverse()) {
    await client.request('DELETE', corePath(namespace, 'configmaps', configMapName)).catch((error: unknown) => {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    });
  }
}

/**
 * Brings one Prometheus's children in line with its spec and the monitors and rules it selects: the
 * rule ConfigMaps (see {@link writeRuleConfigMaps}), the config Secret (written only when its bytes
 * change), the governing Service, the StatefulSet (written only when the hash of its inputs
 * changes), and last the deletion of rule ConfigMaps no longer mounted. Invalid ServiceMonitors and
 * PodMonitors are skipped with an Event on them, invalid rule groups left out with one Event per
 * generation (`reported` remembers them); the rest still render.
 */
export async function reconcile(
  client: ApiClient,
  prometheus: Prometheus,
  inputs: Inputs,
  logger: Logger,
  options: StatefulSetOptions,
  reported: ReportedProblems = new ReportedProblems(),
): Promise<PrometheusStatus> {
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
  // Rule ConfigMaps first: the config and the StatefulSet name them.
  const rules = await writeRuleConfigMaps(client, prometheus, inputs, logger, reported);
  const rendered = generateConfig(prometheus, inputs.monitors, inputs.namespaces, {
    podMonitors: inputs.podMonitors,
    ruleFiles: rules.names.map(ruleFilesGlob),
  });
  // Jobs are `serviceMonitor/<namespace>/<name>/<endpoint>`: count the monitors that made it in.
  const monitorJobs = rendered.config.scrape_configs.filter((job) => job.job_name.startsWith('serviceMonitor/'));
  const selected = new Set(monitorJobs.map((job) => job.job_name.split('/').slice(1, 3).join('/'))).size;
  for (const skipped of rendered.skipped) {
    // ServiceMonitors are keyed `<namespace>/<name>`, PodMonitors `podMonitor/<namespace>/<name>`.
    const monitor =
      inputs.monitors.find((m) => `${m.metadata.namespace}/${m.metadata.name}` === skipped.monitor) ??
      inputs.podMonitors.find((m) => `podMonitor/${m.metadata.namespace}/${m.metadata.name}` === skipped.monitor);
    const message = `skipped by Prometheus ${namespace}/${name}: ${skipped.problems.join('; ')}`;
    logger.warn({ monitor: skipped.monitor }, message);
    if (monitor) events.warn(monitor, 'InvalidConfiguration', message);
  }

  // Config Secret: compare the bytes, write only on change.
  const secret = configSecret(prometheus, gzipConfig(rendered.yaml));
  const wanted = (secret.data as Record<string, string>)[CONFIG_KEY];
  await upsert(client, {
    path: corePath(namespace, 'secrets', secretName(prometheus)),
    collection: corePath(namespace, 'secrets'),
    body: secret,
    what: `Secret ${namespace}/${secretName(prometheus)}`,
    upToDate: (current) => (current.data as Record<string, string> | undefined)?.[CONFIG_KEY] === wanted,
    patch: { data: secret.data },
  });

  // Shared by every Prometheus in the namespace: whichever comes first creates it.
  const service = governingService(namespace);
  const serviceSpec = service.spec as { ports: unknown; selector: unknown };
  await upsert(client, {
    path: corePath(namespace, 'services', GOVERNING_SERVICE),
    collection: corePath(namespace, 'services'),
    body: service,
    what: `Service ${namespace}/${GOVERNING_SERVICE}`,
    upToDate: (current) => {
      const spec = current.spec as { ports?: Array<{ name?: string; port?: number; targetPort?: unknown }>; selector?: unknown } | undefined;
      const ports = (spec?.ports ?? []).map(({ name: portName, port, targetPort }) => ({ name: portName, port, targetPort }));
      return sameJson(ports, serviceSpec.ports) && sameJson(spec?.selector, serviceSpec.selector);
    },
    patch: { metadata: { labels: service.metadata?.labels }, spec: { ports: serviceSpec.ports, selector: serviceSpec.selector } },
  });

  // StatefulSet: written only when the hash of its inputs changes.
  const set = statefulSet(prometheus, options, rules.names);
  const hash = set.metadata?.annotations?.[INPUT_HASH];
  const currentSet = await upsert(client, {
    path: statefulSetPath(namespace, statefulSetName(prometheus)),
    collection: statefulSetPath(namespace),
    body: set,
    what: `StatefulSet ${namespace}/${statefulSetName(prometheus)}`,
    upToDate: (current) => current.metadata?.annotations?.[INPUT_HASH] === hash,
    patch: statefulSetPatch(set),
  });
  await deleteStaleRuleConfigMaps(client, prometheus, rules.names.length);
  // StatefulSets report availableReplicas from Kubernetes 1.22 on; before that readyReplicas is the closest.
  const setStatus = currentSet.status as { availableReplicas?: number; readyReplicas?: number } | undefined;
  const available = Number(setStatus?.availableReplicas ?? setStatus?.readyReplicas ?? 0);
  const replicas = prometheus.spec.replicas ?? 1;
  const allAvailable = available >= replicas && replicas > 0;
  return {
    paused: false,
    replicas,
    availableReplicas: available,
    selectedServiceMonitors: selected,
    conditions: [
      {
        type: 'Reconciled',
        status: 'True',
        reason: 'ConfigRendered',
        message: `${selected} ServiceMonitors, ${rendered.skipped.length} skipped${(prometheus.spec as RuleSelection).ruleSelector == null ? '' : `; ${rules.rules} PrometheusRules, ${rules.refusedGroups} rule groups refused`}`,
        lastTransitionTime: now,
      },
      {
        type: 'Available',
        status: allAvailable ? 'True' : 'False',
        reason: allAvailable ? 'AllReplicasAvailable' : 'ReplicasNotAvailable',
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
    statefulSetPath(namespace, statefulSetName(prometheus)),
    corePath(namespace, 'secrets', secretName(prometheus)),
  ];
  const others = (await listPrometheuses(client)).filter((p) => p.metadata.namespace === namespace && p.metadata.uid !== prometheus.metadata.uid);
  if (others.length === 0) paths.push(corePath(namespace, 'services', GOVERNING_SERVICE));
  for (const path of paths) {
    await client.request('DELETE', path).catch((error: unknown) => {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    });
  }
  await deleteStaleRuleConfigMaps(client, prometheus, 0);
}
