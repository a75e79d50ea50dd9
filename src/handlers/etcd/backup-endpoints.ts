import { isObjectName } from './object-names.js';

/** An `etcdEndpoints` entry that names a cluster's client Service. */
export interface ClientServiceEndpoint {
  cluster: string;
  /** The endpoint in one canonical form: `<scheme>://<cluster>-client.<namespace>.svc:2379`. */
  url: string;
}

/**
 * Reads an EtcdBackup's endpoint, which may only name the client Service of an EtcdCluster in the
 * backup's own namespace: `http://<cluster>-client:2379`, optionally with `.<namespace>`,
 * `.<namespace>.svc` or `.<namespace>.svc.<cluster domain>`. Anything else (an IP address, another
 * namespace's Service, a host outside the cluster, credentials or a path in the URL) would let one
 * tenant snapshot another's etcd or make the operator dial arbitrary addresses.
 * @returns the cluster and canonical URL, or the problem in words a user can act on.
 */
export function clientServiceEndpoint(
  namespace: string,
  endpoint: unknown,
): ClientServiceEndpoint | { problem: string } {
  const shown = JSON.stringify(endpoint);
  const expected = `an EtcdCluster's client Service in namespace ${namespace}, e.g. http://<cluster>-client:2379`;
  if (typeof endpoint !== 'string')
    return { problem: `etcdEndpoints entry ${shown} must be ${expected}` };
  let url: URL;
  try {
    url = new URL(endpoint.includes('://') ? endpoint : `http://${endpoint}`);
  } catch {
    return { problem: `etcdEndpoints entry ${shown} is not a URL; use ${expected}` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { problem: `etcdEndpoints entry ${shown} must use http or https` };
  if (
    url.username ||
    url.password ||
    (url.pathname !== '/' && url.pathname !== '') ||
    url.search ||
    url.hash
  ) {
    return {
      problem: `etcdEndpoints entry ${shown} must be just scheme, host and port: ${expected}`,
    };
  }
  if (url.port !== '' && url.port !== '2379')
    return { problem: `etcdEndpoints entry ${shown} must use the client port 2379` };
  const [service, serviceNamespace, svc, ...domain] = url.hostname.split('.');
  const ownNamespace = serviceNamespace === undefined || serviceNamespace === namespace;
  const serviceSuffix =
    svc === undefined || (svc === 'svc' && domain.every((label) => /^[a-z0-9-]+$/.test(label)));
  if (!service?.endsWith('-client') || !ownNamespace || !serviceSuffix) {
    return {
      problem: `etcdEndpoints entry ${shown} must be ${expected}; other hosts and other namespaces are refused`,
    };
  }
  const cluster = service.slice(0, -'-client'.length);
  if (!isObjectName(cluster))
    return {
      problem: `etcdEndpoints entry ${shown} does not name a cluster's client Service (<cluster>-client)`,
    };
  return { cluster, url: `${url.protocol}//${cluster}-client.${namespace}.svc:2379` };
}

/** The parts of a Pod that say whether it is one of a cluster's own running members. */
export interface ListedPod {
  metadata?: {
    name?: string;
    uid?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
    ownerReferences?: { uid?: string; controller?: boolean; kind?: string }[];
  };
  status?: { phase?: string; podIP?: string };
}

/**
 * The Pods a backup of `cluster` may dial: Running, not being deleted, controlled by the EtcdCluster
 * with `clusterUid` and labelled as its members. Never a Service or a DNS name: the tenant can own a
 * Service called `<cluster>-client` (an `ExternalName` to another namespace's etcd) before the
 * operator creates its own, or while the cluster is paused.
 */
export function ownMemberPods<P extends ListedPod>(
  pods: readonly P[],
  cluster: string,
  clusterUid: string,
): P[] {
  return pods.filter((pod) => {
    const meta = pod.metadata;
    const labels = meta?.labels ?? {};
    const controller = meta?.ownerReferences?.find((owner) => owner.controller === true);
    return (
      !meta?.deletionTimestamp &&
      pod.status?.phase === 'Running' &&
      controller?.uid === clusterUid &&
      controller.kind === 'EtcdCluster' &&
      labels.app === 'etcd' &&
      labels.etcd_cluster === cluster &&
      labels.etcd_node === meta?.name
    );
  });
}
