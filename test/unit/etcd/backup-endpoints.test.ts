import { ClusterDnsAddresses } from '../../../src/handlers/etcd/addresses.js';
import {
  clientServiceEndpoint,
  ownMemberPods,
  type ListedPod,
} from '../../../src/handlers/etcd/backup-endpoints.js';

describe('an EtcdBackup endpoint may only name a client Service in its own namespace', () => {
  it.each([
    ['http://db-client:2379'],
    ['http://db-client.team-a:2379'],
    ['http://db-client.team-a.svc:2379'],
    ['http://db-client.team-a.svc.cluster.local:2379'],
    ['db-client:2379'],
  ])('%s is the client Service of cluster db', (endpoint) => {
    expect(clientServiceEndpoint('team-a', endpoint)).toEqual({
      cluster: 'db',
      url: 'http://db-client.team-a.svc:2379',
    });
  });

  it.each([
    ['another namespace', 'http://db-client.team-b:2379'],
    ['another namespace, fully qualified', 'http://db-client.team-b.svc.cluster.local:2379'],
    ['an IP address', 'http://10.0.0.7:2379'],
    ['loopback', 'http://127.0.0.1:2379'],
    ['a host outside the cluster', 'http://db-client.example.com:2379'],
    ['a Service that is no client Service', 'http://kubernetes.default:443'],
    ['credentials in the URL', 'http://user:pw@db-client:2379'],
    ['a path', 'http://db-client:2379/v3/kv'],
    ['another port', 'http://db-client:2380'],
    ['another scheme', 'unix://db-client:2379'],
  ])('%s is refused with a reason', (_what, endpoint) => {
    const result = clientServiceEndpoint('team-a', endpoint);
    expect(result).toHaveProperty('problem');
    expect((result as { problem: string }).problem).toContain(JSON.stringify(endpoint));
  });
});

describe('a backup dials only the running member Pods its cluster controls', () => {
  const member = (
    name: string,
    changes: {
      phase?: string;
      owner?: { uid?: string; controller?: boolean; kind?: string };
      labels?: Record<string, string>;
      deleting?: boolean;
    } = {},
  ): ListedPod => ({
    metadata: {
      name,
      labels: changes.labels ?? { app: 'etcd', etcd_cluster: 'db', etcd_node: name },
      ownerReferences: [changes.owner ?? { uid: 'db-uid', controller: true, kind: 'EtcdCluster' }],
      ...(changes.deleting ? { deletionTimestamp: '2024-01-01T00:00:00Z' } : {}),
    },
    status: { phase: changes.phase ?? 'Running', podIP: '10.1.2.3' },
  });

  it('keeps a Running Pod controlled by the cluster and labelled as its member', () => {
    expect(ownMemberPods([member('db-a')], 'db', 'db-uid').map((p) => p.metadata?.name)).toEqual([
      'db-a',
    ]);
  });

  it.each([
    ['a Pending Pod', member('db-a', { phase: 'Pending' })],
    ['a Pod being deleted', member('db-a', { deleting: true })],
    [
      'a Pod of another cluster uid (a same-named cluster before)',
      member('db-a', { owner: { uid: 'old-uid', controller: true, kind: 'EtcdCluster' } }),
    ],
    [
      'a Pod that merely lists the cluster as a non-controller owner',
      member('db-a', { owner: { uid: 'db-uid', kind: 'EtcdCluster' } }),
    ],
    [
      'a Pod whose member label is not its own name',
      member('db-a', { labels: { app: 'etcd', etcd_cluster: 'db', etcd_node: 'db-b' } }),
    ],
    [
      'a Pod labelled for another cluster',
      member('db-a', { labels: { app: 'etcd', etcd_cluster: 'other', etcd_node: 'db-a' } }),
    ],
  ])('leaves out %s', (_what, pod) => {
    expect(ownMemberPods([pod], 'db', 'db-uid')).toEqual([]);
  });

  it('in a cluster, dials the Pod IP (no DNS name a tenant Service could redirect)', () => {
    const addresses = new ClusterDnsAddresses('.cluster.local');
    expect(addresses.podClientURL('team-a', 'db', { name: 'db-a', podIP: '10.1.2.3' })).toBe(
      'http://10.1.2.3:2379',
    );
    expect(addresses.podClientURL('team-a', 'db', { name: 'db-a', podIP: 'fd00::7' })).toBe(
      'http://[fd00::7]:2379',
    );
    expect(addresses.podClientURL('team-a', 'db', { name: 'db-a' })).toBeUndefined();
    expect(
      addresses.podClientURL('team-a', 'db', { name: 'db-a', podIP: 'victim-client.victim.svc' }),
    ).toBeUndefined();
  });
});
