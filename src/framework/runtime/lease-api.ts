import type { ApiClient } from '../api/api-client.js';
import { ApiError } from '../api/api-error.js';
import { LEASES, namespacedCollectionPath, objectPath } from '../api/resource.js';
import type { Lease } from './lease-record.js';

/** Reads and writes one `coordination.k8s.io/v1` Lease, each request bounded by the attempt timeout. */
export class LeaseApi {
  constructor(
    private readonly client: ApiClient,
    private readonly namespace: string,
    private readonly name: string,
    private readonly attemptMs: number,
  ) {}

  /** The Lease, or undefined when there is none yet. */
  async read(signal: AbortSignal): Promise<Lease | undefined> {
    try {
      return await this.client.request<Lease>('GET', this.leasePath(), {
        signal,
        timeoutMs: this.attemptMs,
      });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** Creates (POST) or replaces (PUT, guarded by the Lease's resourceVersion) the Lease. */
  write(method: 'POST' | 'PUT', lease: Lease, signal: AbortSignal): Promise<Lease> {
    const path = method === 'POST' ? this.collectionPath() : this.leasePath();
    return this.client.request<Lease>(method, path, {
      body: lease,
      signal,
      timeoutMs: this.attemptMs,
    });
  }

  private collectionPath(): string {
    return namespacedCollectionPath(LEASES, this.namespace);
  }

  private leasePath(): string {
    return objectPath(LEASES, this.namespace, this.name);
  }
}

/** A write that lost to another replica's (409 Conflict). */
export function isConflict(error: unknown): boolean {
  return error instanceof ApiError && error.status === 409;
}
