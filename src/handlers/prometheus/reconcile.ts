import {
  ApiError,
  events,
  type ApiClient,
  type Cache,
  type KubeObject,
  type Logger,
  type ResourceClient,
} from 'konductor';
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
import {
  controllerReference,
  deleteIfOwn,
  isControlledBy,
  referencedOwner,
  warnForeignChild,
} from '../common/owned-by.js';
import { sameJson } from '../common/same-json.js';
import { generateConfig, validatePrometheus } from './config.js';
import { fitConfig, jobMonitor, MAX_CONFIG_GZIP_BYTES } from './config-budget.js';
import {
  monitorVerdicts,
  ruleVerdicts,
  selectionOf,
  summary,
  type Selection,
  type Verdicts,
} from './acceptance.js';
import { reportMonitors } from './monitor-reports.js';
import { MONITORING, type Inputs } from './inputs.js';
import { ReportedProblems } from './reported-problems.js';
import { RuleChecks } from './rule-checks.js';
import { ALL_GROUPS, ruleKey, type CheckedRuleFile, type RuleSelection } from './rules.js';
import { selectPodMonitors, selectServiceMonitors } from './selectors.js';
import type { PrometheusResource } from './types.js';

export { readInputs, type Inputs } from './inputs.js';
export { ReportedProblems } from './reported-problems.js';

export { MONITORING } from './inputs.js';

type Prometheus = PrometheusResource & KubeObject;

/** What a reconcile pass found, for the Prometheus object's status. */
export interface PrometheusStatus {
  paused: boolean;
  replicas: number;
  availableReplicas: number;
  /** The ServiceMonitors in the configuration (`serviceMonitors.accepted`, under its older name). */
  selectedServiceMonitors: number;
  /** How many ServiceMonitors it selected, and how many of those it accepted. */
  serviceMonitors?: Selection;
  /** How many PodMonitors it selected, and how many of those it accepted. */
  podMonitors?: Selection;
  /** How many PrometheusRules it selected, and how many of those loaded whole. */
  prometheusRules?: Selection;
  conditions: Array<{
    type: string;
    status: 'True' | 'False';
    reason: string;
    message: string;
    lastTransitionTime: string;
  }>;
}

/** A reconcile pass's status, and its verdict on each monitor and rule it selected (none when it rendered nothing). */
export interface ReconcileResult {
  status: PrometheusStatus;
  verdicts?: Verdicts;
}

/** The clients of the kinds a Prometheus owns. */
function childClients(
  client: ApiClient,
): Record<'secrets' | 'services' | 'configMaps' | 'statefulSets', ResourceClient<KubeObject>> {
  return {
    secrets: client.resource<KubeObject>('v1', 'secrets'),
    services: client.resource<KubeObject>('v1', 'services'),
    configMaps: client.resource<KubeObject>('v1', 'configmaps'),
    statefulSets: client.resource<KubeObject>('apps/v1', 'statefulsets'),
  };
}

/** How {@link upsert} makes one child. */
interface Child {
  /** Its kind's client. */
  resource: ResourceClient<KubeObject>;
  /** Where it is. */
  ref: { namespace: string; name: string };
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
 * it is then read and patched like any existing object. A child whose body names a controller (the
 * Prometheus) is patched only when the existing object's controller reference carries that uid:
 * someone else's object of the same name is left untouched, with a Warning Event on the Prometheus.
 * Returns the object as last seen.
 */
async function upsert(child: Child): Promise<KubeObject> {
  let current = await child.resource.find(child.ref);
  if (!current) {
    try {
      return await child.resource.create(child.body);
    } catch (error) {
      if (!ApiError.isAlreadyExists(error) && !ApiError.isConflict(error)) throw error;
    }
    current = await child.resource.find(child.ref);
    if (!current)
      throw new Error(
        `${child.what} was reported as existing but is gone; the next reconcile creates it again`,
      );
  }
  const owner = controllerReference(child.body);
  if (owner && !isControlledBy(current, owner.uid)) {
    warnForeignChild(referencedOwner(owner, child.ref.namespace), child.what);
    return current;
  }
  if (child.upToDate(current)) return current;
  const patch = typeof child.patch === 'function' ? child.patch(current) : child.patch;
  return child.resource.patch(child.ref, patch);
}

/**
 * The merge patch that makes an existing StatefulSet's spec the wanted one. A merge patch keeps keys
 * it does not mention, so optional keys the wanted spec leaves out are sent as null; the deprecated
 * `serviceAccount` too, since the API server would otherwise restore `serviceAccountName` from it.
 */
function statefulSetPatch(set: KubeObject): Record<string, unknown> {
  const spec = set.spec as { template: { spec: Record<string, unknown> } };
  const podSpec = { serviceAccountName: null, serviceAccount: null, ...spec.template.spec };
  return {
    metadata: { annotations: set.metadata?.annotations },
    spec: { ...spec, template: { ...spec.template, spec: podSpec } },
  };
}

/** A string map with its keys sorted, so two maps compare by content alone. */
function sortedMap(map: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
}

/** The status of a pass that rendered nothing, with the condition saying why. */
function failed(
  prometheus: Prometheus,
  selected: number,
  condition: PrometheusStatus['conditions'][number],
  paused = false,
): PrometheusStatus {
  return {
    paused,
    replicas: prometheus.spec.replicas ?? 1,
    availableReplicas: 0,
    selectedServiceMonitors: selected,
    conditions: [condition],
  };
}

/** What the API server answers a write whose content it refuses: 400 Bad Request, 413 too large, 422 Invalid. */
const REFUSED_CONTENT: ReadonlySet<number> = new Set([400, 413, 422]);

/** `a, b, c` for at most five names, then how many more. */
function names(keys: readonly string[]): string {
  return keys.length > 5
    ? `${keys.slice(0, 5).join(', ')} and ${keys.length - 5} more`
    : keys.join(', ');
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
  ruleChecks: RuleChecks,
): Promise<{
  names: string[];
  checked: CheckedRuleFile[];
  refusedGroups: number;
  tooLarge: string[];
}> {
  const { name, namespace } = prometheus.metadata;
  if ((prometheus.spec as RuleSelection).ruleSelector == null)
    return { names: [], checked: [], refusedGroups: 0, tooLarge: [] };
  const checked = await ruleChecks.files(prometheus, inputs.rules, inputs.namespaces);
  let refusedGroups = 0;
  const tooLarge: string[] = [];
  for (const file of checked) {
    const rule = file.rule;
    if (file.tooLarge === true) tooLarge.push(ruleKey(rule));
    for (const refused of file.refused) {
      refusedGroups += 1;
      const message =
        refused.group === ALL_GROUPS
          ? `PrometheusRule ${ruleKey(rule)} is refused by Prometheus ${namespace}/${name}: ${summary(refused.problems)}`
          : `rule group ${JSON.stringify(refused.group)} of PrometheusRule ${ruleKey(rule)} is refused by Prometheus ${namespace}/${name} (its other groups still load): ${summary(refused.problems)}`;
      if (!reported.firstTime(rule, message)) continue;
      logger.warn({ rule: ruleKey(rule), group: refused.group }, message);
      events.warn(rule, file.tooLarge === true ? 'RuleTooLarge' : 'InvalidRuleGroup', message);
    }
  }
  const files = new Map<string, string>();
  for (const file of checked)
    if (file.key !== undefined && file.content !== undefined) files.set(file.key, file.content);
  const configMaps = ruleConfigMaps(prometheus, files);
  for (const configMap of configMaps) {
    const configMapName = configMap.metadata?.name as string;
    const data = configMap.data as Record<string, string>;
    const labels = configMap.metadata?.labels as Record<string, string>;
    await upsert({
      resource: client.resource<KubeObject>('v1', 'configmaps'),
      ref: { namespace, name: configMapName },
      body: configMap,
      what: `ConfigMap ${namespace}/${configMapName}`,
      upToDate: (current) =>
        sameJson(sortedMap(current.data as Record<string, string> | undefined), sortedMap(data)) &&
        Object.entries(labels).every(([key, value]) => current.metadata?.labels?.[key] === value),
      // A merge patch keeps keys it does not mention: files no longer wanted are sent as null.
      patch: (current) => ({
        metadata: { labels, ownerReferences: configMap.metadata?.ownerReferences },
        data: {
          ...Object.fromEntries(
            Object.keys((current.data as Record<string, string> | undefined) ?? {}).map((key) => [
              key,
              null,
            ]),
          ),
          ...data,
        },
      }),
    });
  }
  return {
    names: configMaps.map((configMap) => configMap.metadata?.name as string),
    checked,
    refusedGroups,
    tooLarge,
  };
}

/**
 * Deletes the rule ConfigMaps past the wanted ones (`rulefiles-<wanted>` and up, which this
 * Prometheus owns), highest first, so what remains is always `0..n-1` and the next pass finds any
 * leftover by counting up. Called after the StatefulSet stops mounting them.
 */
async function deleteStaleRuleConfigMaps(
  client: ApiClient,
  prometheus: Prometheus,
  wanted: number,
): Promise<void> {
  const { namespace, uid } = prometheus.metadata;
  const configMaps = client.resource<KubeObject>('v1', 'configmaps');
  const stale: string[] = [];
  for (let index = wanted; ; index++) {
    const configMapName = ruleConfigMapName(prometheus, index);
    const current = await configMaps.find({ namespace, name: configMapName });
    if (!current) break;
    // Someone else's ConfigMap of that name is left alone.
    const owners = (current.metadata?.ownerReferences ?? []) as Array<{ uid?: string }>;
    if (owners.some((owner) => owner.uid === uid)) stale.push(configMapName);
  }
  for (const configMapName of stale.reverse()) {
    await configMaps.delete({ namespace, name: configMapName });
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
  ruleChecks: RuleChecks = new RuleChecks(),
): Promise<ReconcileResult> {
  const { namespace } = prometheus.metadata;
  const now = new Date().toISOString();
  if (prometheus.spec.paused) {
    const message = 'spec.paused is true: nothing is reconciled';
    return {
      status: failed(
        prometheus,
        0,
        { type: 'Reconciled', status: 'False', reason: 'Paused', message, lastTransitionTime: now },
        true,
      ),
    };
  }
  const problems = validatePrometheus(prometheus);
  if (problems.length > 0) {
    // A bad spec touches nothing: the running StatefulSet and its last good config stay as they are.
    const message = `invalid spec, nothing reconciled: ${problems.join('; ')}`;
    if (reported.firstTime(prometheus, message)) {
      logger.warn(message);
      events.warn(prometheus, 'InvalidConfiguration', message);
    }
    return {
      status: failed(prometheus, 0, {
        type: 'Reconciled',
        status: 'False',
        reason: 'InvalidSpec',
        message,
        lastTransitionTime: now,
      }),
    };
  }
  // Rule ConfigMaps first: the config and the StatefulSet name them.
  const rules = await writeRuleConfigMaps(client, prometheus, inputs, logger, reported, ruleChecks);
  const rendered = generateConfig(prometheus, inputs.monitors, inputs.namespaces, {
    podMonitors: inputs.podMonitors,
    ruleFiles: rules.names.map(ruleFilesGlob),
  });
  // Measured before writing: past the Secret's limit the largest monitors are left out, not the write refused.
  const fitted = fitConfig(rendered.config, { yaml: rendered.yaml });
  reportMonitors(
    prometheus,
    { services: inputs.monitors, pods: inputs.podMonitors },
    { skipped: rendered.skipped, leftOut: fitted.leftOut },
    reported,
    logger,
  );
  // Jobs are `serviceMonitor/<namespace>/<name>/<endpoint>`: count the monitors that made it in.
  const leftOut = new Set(fitted.leftOut.map((m) => m.monitor));
  const monitorJobs = rendered.config.scrape_configs.filter(
    (job) => job.job_name.startsWith('serviceMonitor/') && !leftOut.has(jobMonitor(job.job_name)),
  );
  const selected = new Set(monitorJobs.map((job) => jobMonitor(job.job_name))).size;
  const selection = {
    services: selectServiceMonitors(prometheus, inputs.monitors, inputs.namespaces),
    pods: selectPodMonitors(prometheus, inputs.podMonitors, inputs.namespaces),
  };
  const verdicts = new Map([
    ...monitorVerdicts(
      prometheus.metadata,
      selection,
      rendered.skipped,
      fitted.leftOut,
      MAX_CONFIG_GZIP_BYTES,
    ),
    ...ruleVerdicts(prometheus.metadata, rules.checked),
  ]);

  // Config Secret: compare the bytes, write only on change.
  const secret = configSecret(prometheus, fitted.gzipped);
  const wanted = (secret.data as Record<string, string>)[CONFIG_KEY];
  const children = childClients(client);
  try {
    await upsert({
      resource: children.secrets,
      ref: { namespace, name: secretName(prometheus) },
      body: secret,
      what: `Secret ${namespace}/${secretName(prometheus)}`,
      upToDate: (current) =>
        (current.data as Record<string, string> | undefined)?.[CONFIG_KEY] === wanted,
      patch: { data: secret.data },
    });
  } catch (error) {
    // A refusal of the content (invalid, too large) stays one until the inputs change, which renders
    // again; anything else (a conflict, throttling, the server failing) is thrown, to be retried.
    if (!(error instanceof ApiError) || !REFUSED_CONTENT.has(error.status)) throw error;
    const message = `Prometheus ${namespace}/${prometheus.metadata.name}: the configuration Secret ${namespace}/${secretName(prometheus)} could not be written (${fitted.gzipped.length} gzipped bytes), so Prometheus keeps its previous configuration: ${error.message}`;
    logger.warn(message);
    if (reported.firstTime(prometheus, message))
      events.warn(prometheus, 'ConfigNotWritten', message);
    return {
      status: failed(prometheus, selected, {
        type: 'Reconciled',
        status: 'False',
        reason: 'ConfigNotWritten',
        message,
        lastTransitionTime: now,
      }),
    };
  }

  // Shared by every Prometheus in the namespace: whichever comes first creates it.
  const service = governingService(namespace);
  const serviceSpec = service.spec as { ports: unknown; selector: unknown };
  await upsert({
    resource: children.services,
    ref: { namespace, name: GOVERNING_SERVICE },
    body: service,
    what: `Service ${namespace}/${GOVERNING_SERVICE}`,
    upToDate: (current) => {
      const spec = current.spec as
        | {
            ports?: Array<{ name?: string; port?: number; targetPort?: unknown }>;
            selector?: unknown;
          }
        | undefined;
      const ports = (spec?.ports ?? []).map(({ name: portName, port, targetPort }) => ({
        name: portName,
        port,
        targetPort,
      }));
      return sameJson(ports, serviceSpec.ports) && sameJson(spec?.selector, serviceSpec.selector);
    },
    patch: {
      metadata: { labels: service.metadata?.labels },
      spec: { ports: serviceSpec.ports, selector: serviceSpec.selector },
    },
  });

  // StatefulSet: written only when the hash of its inputs changes.
  const set = statefulSet(prometheus, options, rules.names);
  const hash = set.metadata?.annotations?.[INPUT_HASH];
  const currentSet = await upsert({
    resource: children.statefulSets,
    ref: { namespace, name: statefulSetName(prometheus) },
    body: set,
    what: `StatefulSet ${namespace}/${statefulSetName(prometheus)}`,
    // The hash covers what the operator wrote; replicas are compared too, since a hand edit (kubectl scale) keeps the hash.
    upToDate: (current) =>
      current.metadata?.annotations?.[INPUT_HASH] === hash &&
      (current.spec as { replicas?: number } | undefined)?.replicas ===
        (set.spec as { replicas: number }).replicas,
    patch: statefulSetPatch(set),
  });
  await deleteStaleRuleConfigMaps(client, prometheus, rules.names.length);
  // StatefulSets report availableReplicas from Kubernetes 1.22 on; before that readyReplicas is the closest.
  const setStatus = currentSet.status as
    { availableReplicas?: number; readyReplicas?: number } | undefined;
  const available = Number(setStatus?.availableReplicas ?? setStatus?.readyReplicas ?? 0);
  const replicas = prometheus.spec.replicas ?? 1;
  const allAvailable = available >= replicas && replicas > 0;
  const ruleSummary =
    (prometheus.spec as RuleSelection).ruleSelector == null
      ? ''
      : `; ${rules.checked.length} PrometheusRules, ${rules.refusedGroups} rule groups refused${rules.tooLarge.length > 0 ? `, ${rules.tooLarge.length} PrometheusRules refused as too large (${names(rules.tooLarge)})` : ''}`;
  const leftOutSummary =
    fitted.leftOut.length === 0
      ? ''
      : `, ${fitted.leftOut.length} left out to keep the configuration within ${MAX_CONFIG_GZIP_BYTES} gzipped bytes (${names(fitted.leftOut.map((m) => m.monitor))})`;
  const status: PrometheusStatus = {
    paused: false,
    replicas,
    availableReplicas: available,
    selectedServiceMonitors: selected,
    serviceMonitors: selectionOf(verdicts, 'ServiceMonitor'),
    podMonitors: selectionOf(verdicts, 'PodMonitor'),
    prometheusRules: selectionOf(verdicts, 'PrometheusRule'),
    conditions: [
      {
        type: 'Reconciled',
        status: 'True',
        reason: fitted.leftOut.length > 0 ? 'MonitorsLeftOut' : 'ConfigRendered',
        message: `${selected} ServiceMonitors, ${rendered.skipped.length} skipped${leftOutSummary}${ruleSummary}`,
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
  return { status, verdicts };
}

/**
 * Removes what a deleted Prometheus owned (owner references do the same where a garbage collector
 * runs); the shared governing Service only when no other cached Prometheus of the namespace is left.
 * The StatefulSet and config Secret go only when they are this Prometheus's ({@link deleteIfOwn}).
 */
export async function removeChildren(
  client: ApiClient,
  cache: Cache,
  prometheus: Prometheus,
): Promise<void> {
  const { namespace } = prometheus.metadata;
  const children = childClients(client);
  const owned: Array<[ResourceClient<KubeObject>, string, string]> = [
    [children.statefulSets, statefulSetName(prometheus), 'StatefulSet'],
    [children.secrets, secretName(prometheus), 'Secret'],
  ];
  for (const [resource, childName, kind] of owned) {
    const current = await resource.find({ namespace, name: childName });
    if (current) await deleteIfOwn(resource, current, kind, prometheus);
  }
  const others = cache
    .resource<Prometheus>(MONITORING, 'prometheuses')
    .list({ namespace })
    .filter((p) => p.metadata.uid !== prometheus.metadata.uid);
  if (others.length === 0) await children.services.delete({ namespace, name: GOVERNING_SERVICE });
  await deleteStaleRuleConfigMaps(client, prometheus, 0);
}
