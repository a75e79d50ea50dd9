import {
  ClusterDnsAddresses,
  memberClientURL,
  type EtcdAddresses,
} from '../../../src/handlers/etcd/addresses.js';
import {
  DEFAULT_REPOSITORY,
  readClusterSpec,
  type ClusterSpec,
} from '../../../src/handlers/etcd/cluster-spec.js';
import {
  memberPod,
  TLS_DIGEST_ANNOTATION,
  TLS_MODE_ANNOTATION,
  type ClusterOwner,
} from '../../../src/handlers/etcd/member-pod.js';
import {
  readTLSPolicy,
  securedURLs,
  tlsMode,
  tlsModeChangeProblem,
  type TLSPolicy,
} from '../../../src/handlers/etcd/tls-policy.js';

const upstreamExample = {
  static: {
    member: { peerSecret: 'etcd-peer-tls', serverSecret: 'etcd-server-tls' },
    operatorSecret: 'etcd-client-tls',
  },
};
const full: TLSPolicy = {
  peerSecret: 'etcd-peer-tls',
  serverSecret: 'etcd-server-tls',
  operatorSecret: 'etcd-client-tls',
};

describe('readTLSPolicy', () => {
  test("reads etcd-operator's TLS example", () => {
    expect(readTLSPolicy(upstreamExample)).toEqual({ policy: full });
  });

  test.each([
    undefined,
    null,
    {},
    { static: null },
    { static: { member: {} } },
    { static: { member: { peerSecret: '' } } },
  ])('reads %j as no TLS', (value) => {
    expect(readTLSPolicy(value)).toEqual({});
  });

  test('peer TLS alone is allowed', () => {
    expect(readTLSPolicy({ static: { member: { peerSecret: 'p' } } })).toEqual({
      policy: { peerSecret: 'p' },
    });
  });

  test.each([
    [
      { static: { member: { serverSecret: 's' } } },
      /serverSecret and .*operatorSecret must be set together/,
    ],
    [{ static: { operatorSecret: 'o' } }, /must be set together/],
    [
      { static: { member: { peerSecret: '../other-namespace' } } },
      /peerSecret must name a Secret .* got "..\/other-namespace"/,
    ],
    [
      { static: { operatorSecret: 7, member: { serverSecret: 's' } } },
      /operatorSecret must name a Secret/,
    ],
    ['tls', /spec.TLS must be an object/],
    [{ static: [] }, /spec.TLS.static must be an object/],
  ])('refuses %j with what to do', (value, problem) => {
    const read = readTLSPolicy(value);
    expect('problem' in read && read.problem).toMatch(problem);
  });

  test('a spec with a bad TLS block is invalid as a whole', () => {
    expect(
      readClusterSpec({ size: 3, TLS: { static: { member: { serverSecret: 's' } } } }),
    ).toEqual({ problems: [expect.stringMatching(/must be set together/)] });
  });
});

describe('securedURLs', () => {
  const urls = {
    peerURL: 'http://m.c.ns.svc:2380',
    clientURL: 'http://m.c.ns.svc:2379',
    listenPeerURL: 'http://0.0.0.0:2380',
    listenClientURL: 'http://0.0.0.0:2379',
  };

  test('peer TLS secures the peer URLs only', () => {
    expect(securedURLs(urls, { peerSecret: 'p' })).toEqual({
      ...urls,
      peerURL: 'https://m.c.ns.svc:2380',
      listenPeerURL: 'https://0.0.0.0:2380',
    });
  });

  test('server TLS secures the client URLs only', () => {
    expect(securedURLs(urls, { serverSecret: 's', operatorSecret: 'o' })).toEqual({
      ...urls,
      clientURL: 'https://m.c.ns.svc:2379',
      listenClientURL: 'https://0.0.0.0:2379',
    });
  });

  test('no policy changes nothing', () => {
    expect(securedURLs(urls, undefined)).toEqual(urls);
  });
});

describe('TLS mode', () => {
  test('names the sides that talk TLS', () => {
    expect([tlsMode(undefined), tlsMode({ peerSecret: 'p' }), tlsMode(full)]).toEqual([
      'none',
      'peer',
      'peer,server',
    ]);
  });

  test('a running cluster cannot gain or lose TLS, and the message says what to do', () => {
    expect(tlsModeChangeProblem('none', 'peer,server')).toMatch(
      /asks for TLS for peer and server but the members run with no TLS.*restore a backup into a new cluster/,
    );
    expect(tlsModeChangeProblem('peer,server', 'peer,server')).toBeUndefined();
  });
});

describe('the operator dials a TLS member', () => {
  const addresses: EtcdAddresses = new ClusterDnsAddresses();

  test('by its name over https, the name its server certificate carries', () => {
    expect(
      memberClientURL(addresses, 'ns', 'c', { name: 'c-abc', podIP: '10.244.0.7' }, full),
    ).toBe('https://c-abc.c.ns.svc:2379');
  });

  test('by its Pod address over http without server TLS', () => {
    expect(
      memberClientURL(
        addresses,
        'ns',
        'c',
        { name: 'c-abc', podIP: '10.244.0.7' },
        { peerSecret: 'p' },
      ),
    ).toBe('http://10.244.0.7:2379');
  });

  test('not at all before the Pod has an address', () => {
    expect(memberClientURL(addresses, 'ns', 'c', { name: 'c-abc' }, full)).toBeUndefined();
  });
});

describe('a TLS member Pod', () => {
  const cluster: ClusterOwner = {
    apiVersion: 'etcd.database.coreos.com/v1beta2',
    kind: 'EtcdCluster',
    metadata: { name: 'c', namespace: 'ns', uid: 'u-1' },
  };
  const spec: ClusterSpec = {
    size: 3,
    repository: DEFAULT_REPOSITORY,
    version: '3.4.23',
    paused: false,
    pod: {},
    tls: full,
  };
  const urls = securedURLs(new ClusterDnsAddresses().member('ns', 'c', 'c-abc'), full);
  type View = {
    metadata: { annotations: Record<string, string> };
    spec: {
      containers: {
        command: string[];
        volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
        readinessProbe: { exec: { command: string[] } };
      }[];
      volumes: { name: string; secret?: { secretName: string } }[];
    };
  };
  const pod = memberPod({
    cluster,
    spec,
    member: 'c-abc',
    urls,
    initialCluster: `c-abc=${urls.peerURL}`,
    state: 'new',
    token: 't',
    tlsDigest: 'd1',
  }) as unknown as View;
  const etcd = pod.spec.containers[0]!;

  test("runs etcd with upstream's TLS flags, asking peers and clients for certificates", () => {
    expect(etcd.command).toEqual(
      expect.arrayContaining([
        '--peer-client-cert-auth=true',
        '--peer-trusted-ca-file=/etc/etcdtls/member/peer-tls/peer-ca.crt',
        '--peer-cert-file=/etc/etcdtls/member/peer-tls/peer.crt',
        '--peer-key-file=/etc/etcdtls/member/peer-tls/peer.key',
        '--client-cert-auth=true',
        '--trusted-ca-file=/etc/etcdtls/member/server-tls/server-ca.crt',
        '--cert-file=/etc/etcdtls/member/server-tls/server.crt',
        '--key-file=/etc/etcdtls/member/server-tls/server.key',
        '--initial-advertise-peer-urls=https://c-abc.c.ns.svc:2380',
        '--advertise-client-urls=https://c-abc.c.ns.svc:2379',
        '--listen-client-urls=https://0.0.0.0:2379',
      ]),
    );
  });

  test('mounts the three Secrets read-only at upstream paths', () => {
    expect(
      pod.spec.volumes.filter((v) => v.secret).map((v) => [v.name, v.secret!.secretName]),
    ).toEqual([
      ['member-peer-tls', 'etcd-peer-tls'],
      ['member-server-tls', 'etcd-server-tls'],
      ['etcd-client-tls', 'etcd-client-tls'],
    ]);
    expect(etcd.volumeMounts.filter((m) => m.readOnly).map((m) => m.mountPath)).toEqual([
      '/etc/etcdtls/member/peer-tls',
      '/etc/etcdtls/member/server-tls',
      '/etc/etcdtls/operator/etcd-tls',
    ]);
  });

  test("probes readiness over https with the operator's client certificate", () => {
    expect(etcd.readinessProbe.exec.command[2]).toBe(
      'ETCDCTL_API=3 etcdctl --endpoints=https://localhost:2379 --cert=/etc/etcdtls/operator/etcd-tls/etcd-client.crt --key=/etc/etcdtls/operator/etcd-tls/etcd-client.key --cacert=/etc/etcdtls/operator/etcd-tls/etcd-client-ca.crt endpoint status',
    );
  });

  test('records the TLS mode and the digest of the Secrets it started with', () => {
    expect(pod.metadata.annotations).toMatchObject({
      [TLS_MODE_ANNOTATION]: 'peer,server',
      [TLS_DIGEST_ANNOTATION]: 'd1',
    });
  });
});
