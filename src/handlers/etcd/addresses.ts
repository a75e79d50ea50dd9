import { isIP } from 'node:net';
import { https, type TLSPolicy } from './tls-policy.js';

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
 * headless Service ({@link ClusterDnsAddresses}); the local pod runner (`./testing`, this operator's test support) maps
 * them to loopback ports instead, because Pod DNS names do not resolve outside a cluster. The
 * handlers never know which one they got.
 */
export interface EtcdAddresses {
  /** The URLs of `member` of `cluster` in `namespace`. Stable for the member's lifetime. */
  member(namespace: string, cluster: string, member: string): MemberURLs;
  /** The member name behind a peer URL from `member list`; undefined when it is not one of this cluster's. */
  memberName(namespace: string, cluster: string, peerURL: string): string | undefined;
  /**
   * The client URL to dial for one running member Pod the operator listed itself (owned by the
   * cluster). Backups dial this rather than a name a user wrote: a Service, and so any DNS name
   * through it, may belong to the tenant (an `ExternalName` pointing at another namespace's etcd).
   * Undefined when the Pod has no usable address yet.
   */
  podClientURL(namespace: string, cluster: string, pod: MemberPodAddress): string | undefined;
}

/** What {@link EtcdAddresses.podClientURL} needs of a Pod. */
export interface MemberPodAddress {
  name: string;
  /** `status.podIP`. */
  podIP?: string;
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

  /** The Pod's own IP: set by the kubelet, not by the tenant, and no DNS record in between. */
  podClientURL(_namespace: string, _cluster: string, pod: MemberPodAddress): string | undefined {
    const ip = pod.podIP ?? '';
    const family = isIP(ip);
    if (family === 0) return undefined;
    return family === 6 ? `http://[${ip}]:2379` : `http://${ip}:2379`;
  }
}

/**
 * The URL the operator dials for a running member Pod of its own: the Pod's address from
 * {@link EtcdAddresses.podClientURL}, or, when the members serve clients over TLS, the member's
 * name from {@link EtcdAddresses.member} over `https`, since that is the name the member's server
 * certificate carries (and a certificate the cluster's CA signed proves the member, not DNS).
 */
export function memberClientURL(
  addresses: EtcdAddresses,
  namespace: string,
  cluster: string,
  pod: MemberPodAddress,
  tls: TLSPolicy | undefined,
): string | undefined {
  if (tls?.serverSecret === undefined) return addresses.podClientURL(namespace, cluster, pod);
  if (addresses.podClientURL(namespace, cluster, pod) === undefined) return undefined; // no address yet: not serving
  return https(addresses.member(namespace, cluster, pod.name).clientURL);
}
