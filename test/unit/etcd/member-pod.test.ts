import { ClusterDnsAddresses, type MemberURLs } from '../../../src/handlers/etcd/addresses.js';
import { DEFAULT_REPOSITORY, type ClusterSpec } from '../../../src/handlers/etcd/cluster-spec.js';
import {
  clusterServices,
  memberLabels,
  memberPod,
  newMemberName,
  runsOlderImage,
  type ClusterOwner,
  type MemberPodInput,
} from '../../../src/handlers/etcd/member-pod.js';

interface Container {
  name: string;
  image: string;
  command: string[];
  env?: { name: string; value?: string }[];
}
interface PodView {
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ownerReferences: Record<string, unknown>[];
  };
  spec: {
    hostname: string;
    subdomain: string;
    restartPolicy: string;
    automountServiceAccountToken: boolean;
    initContainers?: Container[];
    containers: Container[];
    volumes: { name: string; emptyDir?: object }[];
    nodeSelector?: Record<string, string>;
  };
}
interface ServiceView {
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ownerReferences: Record<string, unknown>[];
  };
  spec: {
    clusterIP?: string;
    publishNotReadyAddresses?: boolean;
    selector: Record<string, string>;
    ports: { name: string; port: number; targetPort: number }[];
  };
}

/** The EtcdCluster as the API server returns it: member Pods and Services are adopted by it. */
const cluster: ClusterOwner = {
  apiVersion: 'etcd.database.coreos.com/v1beta2',
  kind: 'EtcdCluster',
  metadata: { name: 'demo', namespace: 'prod', uid: '7f0c1d2e-0000-4000-8000-000000000001' },
};
const member = 'demo-abcde12345';
const spec: ClusterSpec = {
  size: 3,
  repository: DEFAULT_REPOSITORY,
  version: '3.4.23',
  paused: false,
  pod: {},
};
/** URLs as the local pod runner hands them out: IP addresses, nothing to resolve. */
const ipURLs: MemberURLs = {
  peerURL: 'http://127.0.0.1:12380',
  clientURL: 'http://127.0.0.1:12379',
  listenPeerURL: 'http://127.0.0.1:12380',
  listenClientURL: 'http://127.0.0.1:12379',
};
/** URLs in a real cluster: DNS names published by the headless Service. */
const dnsURLs = new ClusterDnsAddresses().member(
  cluster.metadata.namespace,
  cluster.metadata.name,
  member,
);

function pod(overrides: Partial<MemberPodInput> = {}): PodView {
  const input: MemberPodInput = {
    cluster,
    spec,
    member,
    urls: ipURLs,
    initialCluster: `${member}=${ipURLs.peerURL}`,
    state: 'new',
    token: 'token-1',
    ...overrides,
  };
  return memberPod(input) as unknown as PodView;
}

const etcd = (p: PodView): Container => p.spec.containers[0]!;
const expectedOwner = {
  apiVersion: 'etcd.database.coreos.com/v1beta2',
  kind: 'EtcdCluster',
  name: 'demo',
  uid: cluster.metadata.uid,
  controller: true,
  blockOwnerDeletion: true,
};

describe('memberPod metadata', () => {
  it('is named after the member, in the cluster namespace', () => {
    expect(pod().metadata).toMatchObject({ name: member, namespace: 'prod' });
  });

  it('carries the selector labels app, etcd_cluster and etcd_node', () => {
    expect(pod().metadata.labels).toEqual({ app: 'etcd', etcd_cluster: 'demo', etcd_node: member });
  });

  it('labels a restore seed etcd_restore_seed=true, so a NetworkPolicy can admit only seeds to the backup server', () => {
    expect(pod({ restoreFrom: 'http://backups/x' }).metadata.labels).toEqual({
      app: 'etcd',
      etcd_cluster: 'demo',
      etcd_node: member,
      etcd_restore_seed: 'true',
    });
  });

  it('adds the policy labels without letting them override the selector labels', () => {
    const labels = pod({ spec: { ...spec, pod: { labels: { team: 'storage', app: 'not-etcd' } } } })
      .metadata.labels;
    expect(labels).toEqual({
      team: 'storage',
      app: 'etcd',
      etcd_cluster: 'demo',
      etcd_node: member,
    });
  });

  it('is annotated with etcd.version, after the policy annotations', () => {
    const annotations = pod({
      spec: {
        ...spec,
        version: '3.4.24',
        pod: { annotations: { owner: 'me', 'etcd.version': 'stale' } },
      },
    }).metadata.annotations;
    expect(annotations).toEqual({ owner: 'me', 'etcd.version': '3.4.24' });
  });

  it('is owned by its EtcdCluster as the controller, so garbage collection removes it', () => {
    expect(pod().metadata.ownerReferences).toEqual([expectedOwner]);
  });
});

describe('memberPod spec', () => {
  it('runs <repository>:v<version>', () => {
    expect(
      etcd(pod({ spec: { ...spec, repository: 'registry.local/etcd', version: '3.4.24' } })).image,
    ).toBe('registry.local/etcd:v3.4.24');
  });

  it('is never restarted, has the member hostname under the cluster subdomain, and no service account token', () => {
    expect(pod().spec).toMatchObject({
      restartPolicy: 'Never',
      hostname: member,
      subdomain: 'demo',
      automountServiceAccountToken: false,
    });
  });

  it('keeps its data on the etcd-data volume under /var/etcd', () => {
    const p = pod();
    expect(p.spec.volumes).toEqual([{ name: 'etcd-data', emptyDir: {} }]);
    expect(etcd(p).command).toContain('--data-dir=/var/etcd/data');
  });

  it('passes the member URLs to etcd', () => {
    expect(
      etcd(pod({ urls: dnsURLs, initialCluster: `${member}=${dnsURLs.peerURL}` })).command,
    ).toEqual(
      expect.arrayContaining([
        `--name=${member}`,
        `--initial-advertise-peer-urls=http://${member}.demo.prod.svc:2380`,
        '--listen-peer-urls=http://0.0.0.0:2380',
        '--listen-client-urls=http://0.0.0.0:2379',
        `--advertise-client-urls=http://${member}.demo.prod.svc:2379`,
        `--initial-cluster=${member}=http://${member}.demo.prod.svc:2380`,
      ]),
    );
  });

  it('applies the pod policy: env, node selector', () => {
    const p = pod({
      spec: {
        ...spec,
        pod: {
          etcdEnv: [{ name: 'ETCD_QUOTA_BACKEND_BYTES', value: '4294967296' }],
          nodeSelector: { disk: 'ssd' },
        },
      },
    });
    expect(etcd(p).env).toEqual([{ name: 'ETCD_QUOTA_BACKEND_BYTES', value: '4294967296' }]);
    expect(p.spec.nodeSelector).toEqual({ disk: 'ssd' });
  });
});

describe('memberPod cluster state', () => {
  it('starts a new cluster with --initial-cluster-state=new and the token', () => {
    const command = etcd(pod({ state: 'new', token: 'fresh-token' })).command;
    expect(command).toContain('--initial-cluster-state=new');
    expect(command).toContain('--initial-cluster-token=fresh-token');
  });

  it('joins an existing cluster with --initial-cluster-state=existing and no token', () => {
    const initialCluster = `demo-first00000=http://127.0.0.1:12000,${member}=${ipURLs.peerURL}`;
    const command = etcd(pod({ state: 'existing', token: undefined, initialCluster })).command;
    expect(command).toContain('--initial-cluster-state=existing');
    expect(command).toContain(`--initial-cluster=${initialCluster}`);
    expect(command.some((arg) => arg.startsWith('--initial-cluster-token'))).toBe(false);
  });
});

describe('memberPod init containers', () => {
  it('has none for IP peer URLs without a restore', () => {
    expect(pod({ urls: ipURLs }).spec.initContainers).toBeUndefined();
  });

  it('waits for its DNS name with one check-dns container when the peer URL is a DNS name', () => {
    const inits = pod({ urls: dnsURLs }).spec.initContainers ?? [];
    expect(inits.map((c) => c.name)).toEqual(['check-dns']);
    expect(inits[0]!.command.join(' ')).toContain(`nslookup ${member}.demo.prod.svc`);
  });

  it('mounts the data volume into both restore init containers, where they write the backup and the data dir', () => {
    const p = pod({
      urls: ipURLs,
      restoreFrom: 'http://etcd-restore-operator:19999/v1/backup/prod/demo',
      token: 'restore-token',
    });
    const mounts = (p.spec.initContainers ?? []).map(
      (c) => (c as Container & { volumeMounts?: unknown[] }).volumeMounts,
    );
    expect(mounts).toEqual([
      [{ name: 'etcd-data', mountPath: '/var/etcd' }],
      [{ name: 'etcd-data', mountPath: '/var/etcd' }],
    ]);
  });

  it('downloads the backup, then restores the data dir, when restoreFrom is given', () => {
    const url = 'http://etcd-restore-operator:19999/v1/backup/prod/demo';
    const p = pod({ urls: ipURLs, restoreFrom: url, token: 'restore-token' });
    const inits = p.spec.initContainers ?? [];
    expect(inits.map((c) => c.name)).toEqual(['fetch-backup', 'restore-datadir']);
    expect(inits[0]!.command).toEqual(['wget', '-q', '-O', '/var/etcd/latest.backup', url]);
    expect(inits[1]!.image).toBe(etcd(p).image);
    expect(inits[1]!.env).toEqual([{ name: 'ETCDCTL_API', value: '3' }]);
    expect(inits[1]!.command).toEqual([
      'etcdctl',
      'snapshot',
      'restore',
      '/var/etcd/latest.backup',
      '--name',
      member,
      '--initial-cluster',
      `${member}=${ipURLs.peerURL}`,
      '--initial-cluster-token',
      'restore-token',
      '--initial-advertise-peer-urls',
      ipURLs.peerURL,
      '--data-dir',
      '/var/etcd/data',
    ]);
  });

  it('checks DNS before downloading a backup when the peer URL is a DNS name', () => {
    const inits =
      pod({
        urls: dnsURLs,
        initialCluster: `${member}=${dnsURLs.peerURL}`,
        restoreFrom: 'http://backups/x',
      }).spec.initContainers ?? [];
    expect(inits.map((c) => c.name)).toEqual(['check-dns', 'fetch-backup', 'restore-datadir']);
  });
});

describe('member names', () => {
  it('are <cluster>-<10 lowercase alphanumerics>', () => {
    expect(newMemberName('demo')).toMatch(/^demo-[a-z0-9]{10}$/);
  });

  it('cut the cluster part to 52 characters so the name fits 63', () => {
    const name = newMemberName('c'.repeat(80));
    expect(name).toHaveLength(63);
    expect(name).toMatch(/^c{52}-[a-z0-9]{10}$/);
  });

  it('differ from one member to the next', () => {
    expect(new Set(Array.from({ length: 20 }, () => newMemberName('demo'))).size).toBe(20);
  });

  it('label the member Pod, and only the cluster labels select them all', () => {
    expect(memberLabels('demo')).toEqual({ app: 'etcd', etcd_cluster: 'demo' });
    expect(memberLabels('demo', member)).toEqual({
      app: 'etcd',
      etcd_cluster: 'demo',
      etcd_node: member,
    });
  });
});

describe('clusterServices', () => {
  const [peer, client] = clusterServices(cluster) as unknown as ServiceView[];

  it('are the peer Service <cluster> and the client Service <cluster>-client, in the cluster namespace', () => {
    expect(clusterServices(cluster)).toHaveLength(2);
    expect([peer!.metadata.name, client!.metadata.name]).toEqual(['demo', 'demo-client']);
    expect([peer!.metadata.namespace, client!.metadata.namespace]).toEqual(['prod', 'prod']);
  });

  it('make the peer Service headless and publish unready members, so member DNS names resolve before they are ready', () => {
    expect(peer!.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
    expect(peer!.metadata.annotations).toEqual({
      'service.alpha.kubernetes.io/tolerate-unready-endpoints': 'true',
    });
  });

  it('expose client and peer ports on the peer Service', () => {
    expect(peer!.spec.ports).toEqual([
      { name: 'client', port: 2379, targetPort: 2379, protocol: 'TCP' },
      { name: 'peer', port: 2380, targetPort: 2380, protocol: 'TCP' },
    ]);
  });

  it('give the client Service a cluster IP and only the client port, for ready members', () => {
    expect(client!.spec.clusterIP).toBeUndefined();
    expect(client!.spec.ports).toEqual([
      { name: 'client', port: 2379, targetPort: 2379, protocol: 'TCP' },
    ]);
    expect(client!.metadata.annotations).toEqual({
      'service.alpha.kubernetes.io/tolerate-unready-endpoints': 'false',
    });
  });

  it('select and carry the cluster labels, without etcd_node', () => {
    for (const service of [peer!, client!]) {
      expect(service.spec.selector).toEqual({ app: 'etcd', etcd_cluster: 'demo' });
      expect(service.metadata.labels).toEqual({ app: 'etcd', etcd_cluster: 'demo' });
    }
  });

  it('are owned by the EtcdCluster as the controller', () => {
    for (const service of [peer!, client!])
      expect(service.metadata.ownerReferences).toEqual([expectedOwner]);
  });
});

describe('runsOlderImage: a member upgraded in place, before the kubelet restarts it', () => {
  const pod = (wanted: string, running?: string) => ({
    spec: { containers: [{ name: 'etcd', image: wanted }] },
    status: running === undefined ? {} : { containerStatuses: [{ name: 'etcd', image: running }] },
  });

  it('holds while the running container has the tag the Pod is being upgraded from', () => {
    expect(runsOlderImage(pod('quay.io/coreos/etcd:v3.5.30', 'quay.io/coreos/etcd:v3.4.23'))).toBe(
      true,
    );
  });
  it("lets go once the container runs the Pod's tag, however the kubelet spells the repository", () => {
    expect(runsOlderImage(pod('quay.io/coreos/etcd:v3.5.30', 'quay.io/coreos/etcd:v3.5.30'))).toBe(
      false,
    );
    expect(runsOlderImage(pod('etcd:v3.5.30', 'docker.io/library/etcd:v3.5.30'))).toBe(false);
  });
  it('does not hold on what it cannot compare: a digest, a registry port without a tag, no status yet', () => {
    expect(runsOlderImage(pod('quay.io/coreos/etcd:v3.5.30', 'sha256:0123abcd'))).toBe(false);
    expect(runsOlderImage(pod('localhost:5000/etcd', 'localhost:5000/etcd'))).toBe(false);
    expect(runsOlderImage(pod('quay.io/coreos/etcd:v3.5.30'))).toBe(false);
  });
});
