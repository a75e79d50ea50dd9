/** The URLs one etcd member advertises and listens on. */
export interface MemberURLs {
  /** Advertised to peers (`--initial-advertise-peer-urls`, member add). */
  peerURL: string;
  /** Advertised to clients, and dialled by the operator. */
  clientURL: string;
  /** `--listen-peer-urls`. */
  listenPeerURL: string;
  /** `--listen-client-urls`. */
  listenClientURL: string;
}

/**
 * Where etcd members and the restore endpoint are reached. In a cluster these are DNS names of the
 * headless Service ({@link ClusterDnsAddresses}); the local pod runner in `konductor/testing` maps
 * them to loopback ports instead, because Pod DNS names do not resolve outside a cluster. The
 * handlers never know which one they got.
 */
export interface EtcdAddresses {
  /** The URLs of `member` of `cluster` in `namespace`. Stable for the member's lifetime. */
  member(namespace: string, cluster: string, member: string): MemberURLs;
  /** The member name behind a peer URL from `member list`; undefined when it is not one of this cluster's. */
  memberName(namespace: string, cluster: string, peerURL: string): string | undefined;
  /** The endpoints to dial for an endpoint a user wrote (an EtcdBackup's `etcdEndpoints`). */
  endpoints(namespace: string, endpoint: string): string[];
}

/** Real-cluster addresses: `<member>.<cluster>.<namespace>.svc<domain>`, published by the headless peer Service. */
export class ClusterDnsAddresses implements EtcdAddresses {
  /** @param clusterDomain appended after `.svc`, e.g. `.cluster.local`; empty relies on the Pod's DNS search path. */
  constructor(private readonly clusterDomain = '') {}

  member(namespace: string, cluster: string, member: string): MemberURLs {
    const host = `${member}.${cluster}.${namespace}.svc${this.clusterDomain}`;
    return {
      peerURL: `http://${host}:2380`,
      clientURL: `http://${host}:2379`,
      listenPeerURL: 'http://0.0.0.0:2380',
      listenClientURL: 'http://0.0.0.0:2379',
    };
  }

  memberName(_namespace: string, cluster: string, peerURL: string): string | undefined {
    const match = /^\w+:\/\/([\w-]+)\.([\w-]+)[\w.-]*(?::\d+)?\/?$/.exec(peerURL);
    if (!match || match[2] !== cluster) return undefined;
    return match[1];
  }

  endpoints(_namespace: string, endpoint: string): string[] {
    // `<service>.<namespace>.svc` resolves through the Pod's search path; with a known domain, say it.
    return [this.clusterDomain ? endpoint.replace(/^(\w+:\/\/[^/:]+\.svc)(?=[:/]|$)/, `$1${this.clusterDomain}`) : endpoint];
  }
}
