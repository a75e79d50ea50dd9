import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { adopt, type KubeObject } from 'konductor';
import type { ClusterSpec } from './cluster-spec.js';
import type { MemberURLs } from './addresses.js';
import { RESTORE_SEED_LABEL, SEED_INIT_CONTAINER } from './restore-annotations.js';
import {
  memberSecretMounts,
  memberTLSFlags,
  NO_TLS,
  readinessCommand,
  tlsMode,
} from './tls-policy.js';

export const DATA_DIR = '/var/etcd/data';
const BACKUP_FILE = '/var/etcd/latest.backup';

/** Labels every member Pod carries; the operator lists Pods by the first two. */
export function memberLabels(cluster: string, member?: string): Record<string, string> {
  return { app: 'etcd', etcd_cluster: cluster, ...(member ? { etcd_node: member } : {}) };
}

/** `<cluster>-<10 random lowercase alphanumerics>`, the cluster part cut so the name fits 63 characters. */
export function newMemberName(cluster: string): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(10);
  const suffix = [...bytes].map((b) => alphabet[b % alphabet.length]).join('');
  return `${cluster.slice(0, 52)}-${suffix}`;
}

/** The EtcdCluster as the API server returned it (apiVersion, kind, name, namespace, uid): the owner of its members. */
export type ClusterOwner = KubeObject & {
  metadata: { name: string; namespace: string; uid: string };
};

export interface MemberPodInput {
  /** The owner: its Pods are adopted by it (controller reference), so garbage collection and `@on.owned` see them. */
  cluster: ClusterOwner;
  spec: ClusterSpec;
  member: string;
  urls: MemberURLs;
  /** `name=peerURL` for every member, this one included. */
  initialCluster: string;
  state: 'new' | 'existing';
  /** Only for a new cluster. */
  token?: string;
  /** A restore seed: where to download the snapshot from before starting. */
  restoreFrom?: string;
  /** The digest of the TLS Secrets the Pod mounts (`spec.tls`), recorded so a change rolls the member. */
  tlsDigest?: string;
}

/** On member Pods of a TLS cluster: the digest of the Secrets it started with (see `readClusterTLS`). */
export const TLS_DIGEST_ANNOTATION = 'etcd.database.coreos.com/tls-digest';
/** On member Pods of a TLS cluster: which sides talk TLS (see `tlsMode`). */
export const TLS_MODE_ANNOTATION = 'etcd.database.coreos.com/tls-mode';

/** The member's data volume; a restore seed's init containers write the backup and the restored data dir there too. */
const DATA_MOUNT = { name: 'etcd-data', mountPath: '/var/etcd' };

/** The image of the members' init containers (DNS wait, backup download). */
const BUSYBOX_IMAGE = 'busybox:1.36';

/**
 * One Pod per member, as the original operator: a StatefulSet cannot add a member to etcd before its
 * Pod starts, and a test control plane has no controller to create StatefulSet Pods at all.
 * `restartPolicy: Never`: a dead member is replaced through the member API, never restarted.
 */
export function memberPod(input: MemberPodInput): KubeObject {
  const { cluster, spec, member, urls } = input;
  const name = cluster.metadata.name;
  const image = `${spec.repository}:v${spec.version}`;
  const command = [
    '/usr/local/bin/etcd',
    `--data-dir=${DATA_DIR}`,
    `--name=${member}`,
    `--initial-advertise-peer-urls=${urls.peerURL}`,
    `--listen-peer-urls=${urls.listenPeerURL}`,
    `--listen-client-urls=${urls.listenClientURL}`,
    `--advertise-client-urls=${urls.clientURL}`,
    `--initial-cluster=${input.initialCluster}`,
    `--initial-cluster-state=${input.state}`,
    ...(input.token ? [`--initial-cluster-token=${input.token}`] : []),
    ...memberTLSFlags(spec.tls),
  ];
  const secretMounts = memberSecretMounts(spec.tls);
  const tlsMounts = secretMounts.map((m) => ({
    name: m.volume,
    mountPath: m.mountPath,
    readOnly: true,
  }));
  const initContainers: Record<string, unknown>[] = [];
  const peerHost = new URL(urls.peerURL).hostname;
  if (!isIP(peerHost)) {
    // etcd resolves its own advertised name at start; without this wait a fresh Pod dies before DNS knows it.
    initContainers.push({
      name: 'check-dns',
      image: BUSYBOX_IMAGE,
      command: ['/bin/sh', '-c', `until nslookup ${peerHost}; do sleep 1; done`],
    });
  }
  if (input.restoreFrom) {
    initContainers.push(
      // busybox's wget (exit 1 on an HTTP error), from the image the DNS wait already needs: one image fewer to mirror.
      {
        name: SEED_INIT_CONTAINER,
        image: BUSYBOX_IMAGE,
        command: ['wget', '-q', '-O', BACKUP_FILE, input.restoreFrom],
        volumeMounts: [DATA_MOUNT],
      },
      {
        name: 'restore-datadir',
        image,
        env: [{ name: 'ETCDCTL_API', value: '3' }],
        volumeMounts: [DATA_MOUNT],
        command: [
          'etcdctl',
          'snapshot',
          'restore',
          BACKUP_FILE,
          '--name',
          member,
          '--initial-cluster',
          input.initialCluster,
          '--initial-cluster-token',
          input.token ?? '',
          '--initial-advertise-peer-urls',
          urls.peerURL,
          '--data-dir',
          DATA_DIR,
        ],
      },
    );
  }
  const policy = spec.pod;
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: member,
      // Restore seeds are labelled, so a NetworkPolicy can let only them reach the backup server.
      labels: {
        ...(policy.labels ?? {}),
        ...memberLabels(name, member),
        ...(input.restoreFrom ? { [RESTORE_SEED_LABEL]: 'true' } : {}),
      },
      annotations: {
        ...(policy.annotations ?? {}),
        'etcd.version': spec.version,
        ...tlsAnnotations(spec, input.tlsDigest),
      },
    },
    spec: {
      hostname: member,
      subdomain: name,
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      ...(initContainers.length > 0 ? { initContainers } : {}),
      containers: [
        {
          name: 'etcd',
          image,
          command,
          ports: [
            { name: 'client', containerPort: 2379, protocol: 'TCP' },
            { name: 'peer', containerPort: 2380, protocol: 'TCP' },
          ],
          env: policy.etcdEnv ?? [],
          volumeMounts: [DATA_MOUNT, ...tlsMounts],
          readinessProbe: {
            exec: { command: readinessCommand(spec.tls) },
            initialDelaySeconds: 1,
            timeoutSeconds: 5,
            periodSeconds: 5,
            failureThreshold: 3,
          },
          ...(policy.resources ? { resources: policy.resources } : {}),
        },
      ],
      volumes: [
        { name: 'etcd-data', emptyDir: {} },
        ...secretMounts.map((m) => ({
          name: m.volume,
          secret: { secretName: m.secret, items: m.keys.map((key) => ({ key, path: key })) },
        })),
      ],
      ...(policy.nodeSelector ? { nodeSelector: policy.nodeSelector } : {}),
      ...(policy.tolerations ? { tolerations: policy.tolerations } : {}),
      ...(policy.affinity ? { affinity: policy.affinity } : {}),
      ...(policy.securityContext ? { securityContext: policy.securityContext } : {}),
    },
  };
  return adopt(pod, cluster);
}

function tlsAnnotations(spec: ClusterSpec, digest: string | undefined): Record<string, string> {
  const mode = tlsMode(spec.tls);
  return mode === NO_TLS
    ? {}
    : { [TLS_MODE_ANNOTATION]: mode, ...(digest ? { [TLS_DIGEST_ANNOTATION]: digest } : {}) };
}

/** The headless peer Service (publishes member DNS names) and the client Service `<cluster>-client`. */
export function clusterServices(cluster: ClusterOwner): KubeObject[] {
  const name = cluster.metadata.name;
  const selector = memberLabels(name);
  const metadata = (serviceName: string, tolerateUnready: string): KubeObject['metadata'] => ({
    name: serviceName,
    labels: selector,
    annotations: { 'service.alpha.kubernetes.io/tolerate-unready-endpoints': tolerateUnready },
  });
  const services: KubeObject[] = [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: metadata(name, 'true'),
      spec: {
        clusterIP: 'None',
        publishNotReadyAddresses: true,
        selector,
        ports: [
          { name: 'client', port: 2379, targetPort: 2379, protocol: 'TCP' },
          { name: 'peer', port: 2380, targetPort: 2380, protocol: 'TCP' },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: metadata(`${name}-client`, 'false'),
      spec: {
        selector,
        ports: [{ name: 'client', port: 2379, targetPort: 2379, protocol: 'TCP' }],
      },
    },
  ];
  return services.map((service) => adopt(service, cluster));
}

/** The parts of a member Pod that say which image its etcd container should run and which one runs. */
export interface MemberImages {
  spec?: { containers?: { name: string; image?: string }[] };
  status?: { containerStatuses?: { name?: string; image?: string }[] };
}

/** The tag of an image reference (`quay.io/coreos/etcd:v3.5.30` → `v3.5.30`), or undefined for a digest or no tag. */
function tagOf(image: string): string | undefined {
  if (image.includes('@') || image.startsWith('sha256:')) return undefined;
  const colon = image.lastIndexOf(':');
  return colon > image.lastIndexOf('/') ? image.slice(colon + 1) : undefined;
}

/**
 * Whether a member's etcd container still runs an older image than its Pod asks for: right after an
 * in-place upgrade the kubelet has not yet restarted it, and its Pod still reads Ready, so the next
 * member must wait. Compared by tag (the kubelet may report `docker.io/library/...` for a short name);
 * a status naming a digest cannot be compared and does not hold the upgrade.
 */
export function runsOlderImage(pod: MemberImages): boolean {
  const wanted = pod.spec?.containers?.find((c) => c.name === 'etcd')?.image;
  const running = pod.status?.containerStatuses?.find((c) => c.name === 'etcd')?.image;
  if (wanted === undefined || running === undefined) return false;
  const [want, have] = [tagOf(wanted), tagOf(running)];
  return want !== undefined && have !== undefined && want !== have;
}
