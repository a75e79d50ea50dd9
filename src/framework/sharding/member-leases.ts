import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import { LEASES, objectPath } from '../api/resource.js';

/** Where the ring's member Leases are, and the client they are written with. */
export interface MemberLeasesOptions {
  client: ApiClient;
  namespace: string;
  /** The member Leases' name prefix ({@link ringPrefixOf}). */
  prefix: string;
  /** The annotation naming a departed member's heirs. */
  heirsKey: string;
}

/**
 * The coordinator's writes to departed members' Leases: naming their heirs, and removing the Lease
 * once every object is relabelled. Each write holds only on the version read, so a Lease renewed or
 * rewritten meanwhile is left as it is (the next reading of the ring tells what it is now).
 */
export class MemberLeases {
  constructor(private readonly options: MemberLeasesOptions) {}

  /** Names `heirs` on `member`'s Lease; its new version, or undefined when it changed or went meanwhile. */
  async nameHeirs(
    member: string,
    heirs: readonly string[],
    resourceVersion: string | undefined,
  ): Promise<string | undefined> {
    try {
      const lease = await this.options.client.request<{ metadata?: { resourceVersion?: string } }>(
        'PATCH',
        this.path(member),
        {
          body: {
            metadata: {
              resourceVersion,
              annotations: { [this.options.heirsKey]: heirs.join(',') },
            },
          },
          contentType: 'application/merge-patch+json',
        },
      );
      return lease.metadata?.resourceVersion ?? '';
    } catch (error) {
      if (ApiError.isConflict(error) || ApiError.isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Removes `member`'s Lease at `resourceVersion`; whether it is gone (false: it changed meanwhile). */
  async remove(member: string, resourceVersion: string | undefined): Promise<boolean> {
    try {
      await this.options.client.request('DELETE', this.path(member), {
        body: { preconditions: { resourceVersion } },
      });
      return true;
    } catch (error) {
      if (ApiError.isNotFound(error)) return true;
      if (ApiError.isConflict(error)) return false;
      throw error;
    }
  }

  private path(member: string): string {
    const { namespace, prefix } = this.options;
    return objectPath(LEASES, namespace, `${prefix}${member}`);
  }
}
