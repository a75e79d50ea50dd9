import { createHash } from 'node:crypto';
import type { KubeObject } from 'konductor';
import type { PrometheusResource } from './types.js';

/** The annotation holding the hash of a StatefulSet's inputs: equal hash, no write. */
export const INPUT_HASH = 'konductor.dev/prometheus-input-hash';
/** The governing Service shared by every Prometheus in a namespace. */
export const GOVERNING_SERVICE = 'prometheus-operated';
export const CONFIG_KEY = 'prometheus.yaml.gz';
const DEFAULT_IMAGE = 'quay.io/prometheus/prometheus';
const DEFAULT_VERSION = 'v2.42.0';

export function statefulSetName(prometheus: PrometheusResource): string {
  return `prometheus-${prometheus.metadata.name}`;
}

export function secretName(prometheus: PrometheusResource): string {
  return `prometheus-${prometheus.metadata.name}`;
}

function ownerReference(prometheus: PrometheusResource & KubeObject): Record<string, unknown> {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'Prometheus',
    name: prometheus.metadata.name,
    uid: prometheus.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The Secret holding the gzipped configuration the config reloader reads. */
export function configSecret(prometheus: PrometheusResource & KubeObject, gzipped: Buffer): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: secretName(prometheus),
      namespace: prometheus.metadata.namespace,
      labels: { 'app.kubernetes.io/name': 'prometheus', 'app.kubernetes.io/instance': prometheus.metadata.name },
      ownerReferences: [ownerReference(prometheus)],
    },
    type: 'Opaque',
    data: { [CONFIG_KEY]: gzipped.toString('base64') },
  };
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

/** The StatefulSet running Prometheus, annotated with the hash of everything it was built from. */
export function statefulSet(prometheus: PrometheusResource & KubeObject): KubeObject {
  const spec = prometheus.spec;
  const name = prometheus.metadata.name;
  const image = spec.image ?? `${DEFAULT_IMAGE}:${spec.version ?? DEFAULT_VERSION}`;
  const labels = { 'app.kubernetes.io/name': 'prometheus', 'app.kubernetes.io/instance': name, 'operator.prometheus.io/name': name };
  const podSpec = {
    serviceAccountName: spec.serviceAccountName,
    terminationGracePeriodSeconds: 600,
    containers: [
      {
        name: 'prometheus',
        image,
        args: [
          '--config.file=/etc/prometheus/config_out/prometheus.env.yaml',
          '--storage.tsdb.path=/prometheus',
          `--storage.tsdb.retention.time=${spec.retention ?? '24h'}`,
          '--web.enable-lifecycle',
        ],
        ports: [{ name: 'web', containerPort: 9090 }],
        resources: spec.resources ?? {},
        readinessProbe: { httpGet: { path: '/-/ready', port: 'web' } },
        livenessProbe: { httpGet: { path: '/-/healthy', port: 'web' } },
        volumeMounts: [
          { name: 'config', mountPath: '/etc/prometheus/config', readOnly: true },
          { name: 'config-out', mountPath: '/etc/prometheus/config_out' },
          { name: 'data', mountPath: '/prometheus' },
        ],
      },
    ],
    volumes: [
      { name: 'config', secret: { secretName: secretName(prometheus) } },
      { name: 'config-out', emptyDir: {} },
      { name: 'data', emptyDir: {} },
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
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: {
      name: statefulSetName(prometheus),
      namespace: prometheus.metadata.namespace,
      labels,
      annotations: { [INPUT_HASH]: hash },
      ownerReferences: [ownerReference(prometheus)],
    },
    spec: body,
  };
}
