import type {
  EtcdAddresses,
  MemberPodAddress,
  MemberURLs,
} from '../../../src/handlers/etcd/addresses.js';

/** Where a member stands, as the pod runner reports it. */
interface MemberRecord {
  namespace: string;
  cluster: string;
  member: string;
  urls: MemberURLs;
  running: boolean;
  ready: boolean;
}

// Below Linux's ephemeral range (32768+), so ports the kernel hands out (the test API server, its
// etcd, outgoing connections) never collide with the ones allocated here.
const FIRST_PORT = 10_000;
const BASE_RANGE = 20_000;
const LAST_PORT = 32_767;

/**
 * {@link EtcdAddresses} for etcd members run as local processes by the {@link EtcdPodRunner}: each
 * member gets two loopback ports (peer and client) on first use, stable afterwards. Pod DNS names do
 * not resolve outside a cluster, so the handlers advertise these URLs instead.
 *
 * The runner reports which members it runs ({@link setRunning}, {@link setReady}), so that an
 * endpoint naming a cluster's client Service (`<cluster>-client[.<namespace>[.svc...]]`) resolves to
 * the members that actually answer.
 */
export class LoopbackAddresses implements EtcdAddresses {
  private nextPort = FIRST_PORT + 2 * Math.floor((Math.random() * BASE_RANGE) / 2);
  private readonly members = new Map<string, MemberRecord>();
  private readonly byPeerURL = new Map<string, MemberRecord>();

  /** The member's URLs; allocates two ports the first time a member is named. */
  member(namespace: string, cluster: string, member: string): MemberURLs {
    return { ...this.record(namespace, cluster, member).urls };
  }

  /** The member behind a peer URL this instance allocated, when it belongs to `cluster` in `namespace`. */
  memberName(namespace: string, cluster: string, peerURL: string): string | undefined {
    const record = this.byPeerURL.get(normalise(peerURL));
    if (!record || record.namespace !== namespace || record.cluster !== cluster) return undefined;
    return record.member;
  }

  /** The loopback client URL of a member this instance allocated (every Pod runs on 127.0.0.1, so the Pod IP says nothing). */
  podClientURL(namespace: string, cluster: string, pod: MemberPodAddress): string | undefined {
    return this.members.get(key(namespace, cluster, pod.name))?.urls.clientURL;
  }

  /**
   * For tests: for a cluster's client Service (`<cluster>-client`, optionally followed by `.<namespace>` and
   * `.svc...`) of a cluster this instance knows: the client URLs of its running members, ready ones
   * first; empty when none runs. Any other endpoint is returned as it is.
   */
  endpoints(namespace: string, endpoint: string): string[] {
    const service = clientService(endpoint, namespace);
    if (!service) return [endpoint];
    const members = [...this.members.values()].filter(
      (m) => m.namespace === service.namespace && m.cluster === service.cluster,
    );
    if (members.length === 0) return [endpoint];
    const running = members.filter((m) => m.running);
    return [...running.filter((m) => m.ready), ...running.filter((m) => !m.ready)].map(
      (m) => m.urls.clientURL,
    );
  }

  /** Called by the pod runner when a member's process starts or stops. Stopping also clears readiness. */
  setRunning(namespace: string, cluster: string, member: string, running: boolean): void {
    const record = this.members.get(key(namespace, cluster, member));
    if (!record) return; // a Pod whose URLs did not come from here: nothing to resolve to
    record.running = running;
    if (!running) record.ready = false;
  }

  /** Called by the pod runner when a member's readiness (its `/health`) changes. */
  setReady(namespace: string, cluster: string, member: string, ready: boolean): void {
    const record = this.members.get(key(namespace, cluster, member));
    if (record) record.ready = ready;
  }

  private record(namespace: string, cluster: string, member: string): MemberRecord {
    const id = key(namespace, cluster, member);
    let record = this.members.get(id);
    if (!record) {
      const peer = this.allocate();
      const client = peer + 1;
      const urls: MemberURLs = {
        peerURL: `http://127.0.0.1:${peer}`,
        clientURL: `http://127.0.0.1:${client}`,
        listenPeerURL: `http://127.0.0.1:${peer}`,
        listenClientURL: `http://127.0.0.1:${client}`,
      };
      record = { namespace, cluster, member, urls, running: false, ready: false };
      this.members.set(id, record);
      this.byPeerURL.set(normalise(urls.peerURL), record);
    }
    return record;
  }

  /** The first of two consecutive ports; wraps around before the ephemeral range. */
  private allocate(): number {
    if (this.nextPort + 1 > LAST_PORT) this.nextPort = FIRST_PORT;
    const port = this.nextPort;
    this.nextPort += 2;
    return port;
  }
}

function key(namespace: string, cluster: string, member: string): string {
  return `${namespace}/${cluster}/${member}`;
}

/** The URL without its scheme and trailing slashes: a member of a TLS cluster advertises `https` for the same address. */
function normalise(url: string): string {
  return url
    .trim()
    .replace(/^https?:\/\//, '')
    .replace(/\/+$/, '');
}

/** The cluster and namespace of a client Service host, or undefined when the endpoint names something else. */
function clientService(
  endpoint: string,
  namespace: string,
): { cluster: string; namespace: string } | undefined {
  const host = /^(?:[a-z][a-z0-9+.-]*:\/\/)?(?:[^@/]*@)?([^:/?#]+)/i
    .exec(endpoint.trim())?.[1]
    ?.toLowerCase();
  if (!host) return undefined;
  const [service, serviceNamespace, svc] = host.split('.');
  if (!service?.endsWith('-client') || service === '-client') return undefined;
  // `<svc>.<ns>.com` is an outside host that happens to end in -client, not a Service name.
  if (svc !== undefined && svc !== 'svc') return undefined;
  return { cluster: service.slice(0, -'-client'.length), namespace: serviceNamespace ?? namespace };
}
