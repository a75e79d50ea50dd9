import { Etcd3, type IMember } from 'etcd3';
import { noop } from 'cockatiel';
import { errorMessage } from '../common/error-message.js';
import type { ClientCredentials } from './tls-secrets.js';

export { errorMessage };

/** One member as `member list` reports it; IDs are uint64 decimal strings (never JS numbers). */
export interface Member {
  id: string;
  /** Empty while the member has not started. */
  name: string;
  peerURLs: string[];
  clientURLs: string[];
}

/** Timeouts of the original operator: 5 s to dial, 5 s per request. */
const DIAL_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 5_000;

/**
 * A client for the etcd cluster and member APIs, with the npm client's own retries and circuit
 * breaker turned off: the reconciler decides what to retry, and a breaker opened by an expected
 * `unhealthy cluster` answer would hide the member for the next five seconds.
 */
export class EtcdClient {
  private readonly client: Etcd3;

  /** @param credentials for members that serve clients over TLS (`https://` endpoints): the CA to trust and the certificate to present. */
  constructor(endpoints: string[], credentials?: ClientCredentials) {
    this.client = new Etcd3({
      hosts: endpoints,
      ...(credentials
        ? {
            credentials: {
              rootCertificate: credentials.ca,
              certChain: credentials.cert,
              privateKey: credentials.key,
            },
          }
        : {}),
      dialTimeout: DIAL_TIMEOUT_MS,
      defaultCallOptions: () => ({ deadline: Date.now() + REQUEST_TIMEOUT_MS }),
      faultHandling: { host: () => noop, global: noop },
    });
  }

  async members(): Promise<Member[]> {
    const answer = await this.client.cluster.memberList({});
    return answer.members.map(toMember);
  }

  async add(peerURL: string): Promise<Member> {
    const answer = await this.client.cluster.memberAdd({ peerURLs: [peerURL] });
    return toMember(answer.member);
  }

  async remove(id: string): Promise<void> {
    try {
      await this.client.cluster.memberRemove({ ID: id });
    } catch (error) {
      // Already gone counts as removed (the original does the same).
      if (/member not found/i.test(errorMessage(error))) return;
      throw error;
    }
  }

  /** The server version and the revision this endpoint has (a serializable read: no quorum needed). */
  async status(): Promise<{ version: string; revision: string; leader: string; memberId: string }> {
    const status = await this.client.maintenance.status();
    const probe = await this.client.get('/').serializable(true).exec();
    return {
      version: status.version,
      revision: probe.header.revision,
      leader: status.leader,
      memberId: status.header.member_id,
    };
  }

  /** True when the member answers a linearizable read, i.e. it is part of a cluster with quorum. */
  async healthy(): Promise<boolean> {
    try {
      await this.client.get('health').exec();
      return true;
    } catch {
      return false;
    }
  }

  /** The raw npm client, for the snapshot stream. */
  get raw(): Etcd3 {
    return this.client;
  }

  close(): void {
    this.client.close();
  }
}

function toMember(member: IMember): Member {
  return {
    id: String(member.ID),
    name: member.name ?? '',
    peerURLs: member.peerURLs ?? [],
    clientURLs: member.clientURLs ?? [],
  };
}

/** etcd's own refusals right after a membership change; they clear within seconds, so try again next tick. */
export function isTransientMembershipError(error: unknown): boolean {
  return /unhealthy cluster|not enough started members|too many requests|deadline|unavailable|timed out|ECONNREFUSED/i.test(
    errorMessage(error),
  );
}

/** Runs `work` with a client for `endpoints` (with `credentials` when they serve TLS), closing it afterwards. */
export async function withEtcd<T>(
  endpoints: string[],
  work: (client: EtcdClient) => Promise<T>,
  credentials?: ClientCredentials,
): Promise<T> {
  const client = new EtcdClient(endpoints, credentials);
  try {
    return await work(client);
  } finally {
    client.close();
  }
}
