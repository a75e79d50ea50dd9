import { createHash } from 'node:crypto';
import { adopt, type KubeObject } from 'konductor';
import type { PrometheusResource } from './types.js';

/** The annotation holding the hash of a StatefulSet's inputs: equal hash, no write. */
export const INPUT_HASH = 'konductor.dev/prometheus-input-hash';
/** The governing Service shared by every Prometheus in a namespace. */
export const GOVERNING_SERVICE = 'prometheus-operated';
export const CONFIG_KEY = 'prometheus.yaml.gz';
const DEFAULT_IMAGE = 'quay.io/prometheus/prometheus';
const DEFAULT_VERSION = 'v2.42.0';
/** Upstream's default reloader image (its `--prometheus-config-reloader` flag). */
export const DEFAULT_CONFIG_RELOADER_IMAGE =
  'quay.io/prometheus-operator/prometheus-config-reloader:v0.76.0';

/** Where the config Secret is mounted; the reloader reads `CONFIG_KEY` there. */
export const CONFIG_DIR = '/etc/prometheus/config';
/** The emptyDir the reloader writes the substituted configuration into, and Prometheus reads it from. */
export const CONFIG_OUT_DIR = '/etc/prometheus/config_out';
/** The file Prometheus loads: the gunzipped configuration with `$(POD_NAME)` substituted. */
export const CONFIG_FILE = `${CONFIG_OUT_DIR}/prometheus.env.yaml`;
const WEB_PORT = 9090;

/** What the StatefulSet takes from the operator's configuration rather than from the Prometheus object. */
export interface StatefulSetOptions {
  /** The prometheus-config-reloader image for the init container and the sidecar. */
  configReloaderImage: string;
}

export function statefulSetName(prometheus: PrometheusResource): string {
  return `prometheus-${prometheus.metadata.name}`;
}

export function secretName(prometheus: PrometheusResource): string {
  return `prometheus-${prometheus.metadata.name}`;
}

/** Where each rule ConfigMap is mounted: `<RULES_DIR>/<configmap>/`. */
export const RULES_DIR = '/etc/prometheus/rules';
/** Upstream's budget for one rule ConfigMap's data (half of the 1 MiB limit, leaving room for metadata). */
export const MAX_RULE_CONFIGMAP_BYTES = 512 * 1024;

/** `prometheus-<name>-rulefiles-<i>`, upstream's name for the i-th rule ConfigMap. */
export function ruleConfigMapName(prometheus: PrometheusResource, index: number): string {
  return `prometheus-${prometheus.metadata.name}-rulefiles-${index}`;
}

/** The `rule_files` entry for one rule ConfigMap: every file of its mount. */
export function ruleFilesGlob(configMapName: string): string {
  return `${RULES_DIR}/${configMapName}/*.yaml`;
}

/**
 * The rule files, keys sorted, packed first-fit into ConfigMap data of at most
 * {@link MAX_RULE_CONFIGMAP_BYTES} (keys and values counted), as upstream does: a file that does not
 * fit the current ConfigMap starts the next one. Always at least one, possibly empty, so the first
 * PrometheusRule needs no new volume (and no Pod restart). One file larger than the budget is
 * refused before it gets here (see rules.ts).
 */
export function packRuleFiles(files: ReadonlyMap<string, string>): Array<Record<string, string>> {
  const buckets: Array<Record<string, string>> = [{}];
  let size = 0;
  for (const key of [...files.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const value = files.get(key) as string;
    const bytes = Buffer.byteLength(key) + Buffer.byteLength(value);
    if (size + bytes > MAX_RULE_CONFIGMAP_BYTES && size > 0) {
      buckets.push({});
      size = 0;
    }
    (buckets[buckets.length - 1] as Record<string, string>)[key] = value;
    size += bytes;
  }
  return buckets;
}

/** The labels of a rule ConfigMap, upstream's (`prometheus-name`, `managed-by`). */
export function ruleConfigMapLabels(prometheus: PrometheusResource): Record<string, string> {
  return { 'prometheus-name': prometheus.metadata.name, 'managed-by': 'prometheus-operator' };
}

/** The rule ConfigMaps of a Prometheus, `prometheus-<name>-rulefiles-<i>`, owned by it like the config Secret. */
export function ruleConfigMaps(
  prometheus: PrometheusResource & KubeObject,
  files: ReadonlyMap<string, string>,
): KubeObject[] {
  return packRuleFiles(files).map((data, index) =>
    adopt<KubeObject>(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name: ruleConfigMapName(prometheus, index),
          namespace: prometheus.metadata.namespace,
          labels: ruleConfigMapLabels(prometheus),
        },
        data,
      },
      prometheus,
    ),
  );
}

/** The Secret holding the gzipped configuration the config reloader reads. */
export function configSecret(
  prometheus: PrometheusResource & KubeObject,
  gzipped: Buffer,
): KubeObject {
  return adopt<KubeObject>(
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: secretName(prometheus),
        namespace: prometheus.metadata.namespace,
        labels: {
          'app.kubernetes.io/name': 'prometheus',
          'app.kubernetes.io/instance': prometheus.metadata.name,
        },
      },
      type: 'Opaque',
      data: { [CONFIG_KEY]: gzipped.toString('base64') },
    },
    prometheus,
  );
}

/** The headless governing Service (one per namespace, shared). */
export function governingService(namespace: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: GOVERNING_SERVICE, namespace, labels: { 'operated-prometheus': 'true' } },
    spec: {
      clusterIP: 'None',
      ports: [{ name: 'web', port: 9090, targetPort: 'web' }],
      selector: { 'app.kubernetes.io/name': 'prometheus' },
    },
  };
}

/**
 * The reloader's environment: the placeholders the generated configuration may contain
 * (`$(POD_NAME)` in `prometheus_replica`, `$(SHARD)` for sharding; always 0 here).
 */
const RELOADER_ENV = [
  { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
  { name: 'SHARD', value: '0' },
];

const RELOADER_MOUNTS = [
  { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
  { name: 'config-out', mountPath: CONFIG_OUT_DIR },
];

/**
 * prometheus-config-reloader as upstream runs it: it gunzips the Secret's `prometheus.yaml.gz`,
 * substitutes `$(VAR)` from its environment and writes the file Prometheus loads. The init container
 * does this once (`--watch-interval=0`) so Prometheus starts with a config; the sidecar keeps
 * watching and POSTs to Prometheus' reload endpoint on every change.
 */
function configReloader(
  kind: 'init' | 'sidecar',
  image: string,
  ruleMounts: readonly RuleMount[],
): Record<string, unknown> {
  const io = [`--config-file=${CONFIG_DIR}/${CONFIG_KEY}`, `--config-envsubst-file=${CONFIG_FILE}`];
  // The sidecar also watches each rule directory: a changed rule file reloads Prometheus too.
  const watched = ruleMounts.map((mount) => `--watched-dir=${mount.mountPath}`);
  const args =
    kind === 'init'
      ? ['--watch-interval=0', '--listen-address=:8081', ...io]
      : [
          '--listen-address=:8080',
          `--reload-url=http://127.0.0.1:${WEB_PORT}/-/reload`,
          ...io,
          ...watched,
        ];
  return {
    name: kind === 'init' ? 'init-config-reloader' : 'config-reloader',
    image,
    command: ['/bin/prometheus-config-reloader'],
    args,
    env: RELOADER_ENV,
    ...(kind === 'sidecar' ? { ports: [{ name: 'reloader-web', containerPort: 8080 }] } : {}),
    // Upstream's default requests for the reloader.
    resources: { requests: { cpu: '10m', memory: '50Mi' } },
    volumeMounts: kind === 'init' ? RELOADER_MOUNTS : [...RELOADER_MOUNTS, ...ruleMounts],
  };
}

/** One rule ConfigMap's volume mount (the volume is `rulefiles-<i>`: volume names are at most 63 characters). */
interface RuleMount {
  name: string;
  mountPath: string;
  readOnly: true;
}

/**
 * The StatefulSet running Prometheus, annotated with the hash of everything it was built from.
 * Its Pods run Prometheus on the configuration file the config reloader writes from the Secret,
 * with each rule ConfigMap (`ruleConfigMapNames`) mounted at `<RULES_DIR>/<configmap>/`. Only the
 * ConfigMaps' names enter the hash: a changed rule reloads Prometheus, it restarts no Pod.
 */
export function statefulSet(
  prometheus: PrometheusResource & KubeObject,
  options: StatefulSetOptions,
  ruleConfigMapNames: readonly string[] = [],
): KubeObject {
  const spec = prometheus.spec;
  const ruleMounts: RuleMount[] = ruleConfigMapNames.map((configMap, i) => ({
    name: `rulefiles-${i}`,
    mountPath: `${RULES_DIR}/${configMap}`,
    readOnly: true,
  }));
  const name = prometheus.metadata.name;
  const image = spec.image ?? `${DEFAULT_IMAGE}:${spec.version ?? DEFAULT_VERSION}`;
  const labels = {
    'app.kubernetes.io/name': 'prometheus',
    'app.kubernetes.io/instance': name,
    'operator.prometheus.io/name': name,
  };
  const podSpec = {
    ...(spec.serviceAccountName ? { serviceAccountName: spec.serviceAccountName } : {}),
    terminationGracePeriodSeconds: 600,
    initContainers: [configReloader('init', options.configReloaderImage, [])],
    containers: [
      {
        name: 'prometheus',
        image,
        args: [
          `--config.file=${CONFIG_FILE}`,
          '--storage.tsdb.path=/prometheus',
          `--storage.tsdb.retention.time=${spec.retention ?? '24h'}`,
          // Lets the reloader's POST /-/reload in; without it Prometheus answers 403.
          '--web.enable-lifecycle',
        ],
        ports: [{ name: 'web', containerPort: WEB_PORT }],
        resources: spec.resources ?? {},
        readinessProbe: { httpGet: { path: '/-/ready', port: 'web' } },
        livenessProbe: { httpGet: { path: '/-/healthy', port: 'web' } },
        volumeMounts: [
          { name: 'config-out', mountPath: CONFIG_OUT_DIR, readOnly: true },
          { name: 'data', mountPath: '/prometheus' },
          ...ruleMounts,
        ],
      },
      configReloader('sidecar', options.configReloaderImage, ruleMounts),
    ],
    volumes: [
      { name: 'config', secret: { secretName: secretName(prometheus) } },
      { name: 'config-out', emptyDir: {} },
      { name: 'data', emptyDir: {} },
      ...ruleConfigMapNames.map((configMap, i) => ({
        name: `rulefiles-${i}`,
        configMap: { name: configMap },
      })),
    ],
  };
  const body = {
    replicas: spec.replicas ?? 1,
    serviceName: GOVERNING_SERVICE,
    podManagementPolicy: 'Parallel',
    updateStrategy: { type: 'RollingUpdate' },
    selector: { matchLabels: labels },
    template: { metadata: { labels }, spec: podSpec },
  };
  const hash = createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 16);
  return adopt<KubeObject>(
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: {
        name: statefulSetName(prometheus),
        namespace: prometheus.metadata.namespace,
        labels,
        annotations: { [INPUT_HASH]: hash },
      },
      spec: body,
    },
    prometheus,
  );
}
