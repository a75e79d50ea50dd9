// The ceiling: the best a plain client (the framework's bare HTTP client, no framework) can do on this
// control plane, making k API writes per existing object (a status PATCH, then k − 1 metadata PATCHes
// the size of a diff-base annotation). It sweeps the client's concurrency and keeps the best point, so
// the ceiling is never held down by a concurrency that suits this control plane worse than the
// operator's does.
//
// Every write in the sweep changes the object (a merge PATCH that changes nothing costs the API server
// less and would flatter the ceiling): each point writes its own token, and this is checked, not
// assumed. Resource versions are etcd revisions: a write that changed the object answers with a
// revision newer than the point's start (read just before it) and unique within the point; a no-op
// answers with the object's old one. Writes failing that check are counted in `unchangedWrites`.
import { ApiClient } from '../src/framework/api/api-client.js';
import { collection, measure, type BenchTarget, type Measured } from './support.js';

/** The client concurrencies the ceiling sweeps. */
export const CEILING_CONCURRENCIES: readonly number[] = [16, 64, 128, 256];

/** One point of the sweep: `objects` objects written, `writesPerObject` writes each, `concurrency` at a time. */
export interface CeilingPoint {
  writesPerObject: number;
  concurrency: number;
  objects: number;
  seconds: number;
  objectsPerSecond: number;
  /** Writes whose answer shows they changed nothing (must be 0; see the file comment). */
  unchangedWrites: number;
  /** The API server's count of the point's PATCHes and the CPU meanwhile. */
  measured: Measured<unknown>;
}

/** A sweep over {@link CEILING_CONCURRENCIES} for one number of writes per object, and its best point. */
export interface CeilingSweep {
  writesPerObject: number;
  points: CeilingPoint[];
  best: CeilingPoint;
}

interface Written {
  metadata?: { resourceVersion?: string };
}

/** The current etcd revision, as a list's resource version (a quorum read). */
async function currentRevision(client: ApiClient, base: string): Promise<bigint> {
  const list = await client.request<Written>('GET', base, { query: { limit: 1 } });
  return BigInt(list.metadata?.resourceVersion ?? '0');
}

/** How much one sweep point writes: at most `objects` objects (`o-0`, `o-1`, …), for at most about `seconds`. */
export interface PointSize {
  objects: number;
  seconds: number;
}

/**
 * One sweep point: objects `o-0`, `o-1`, … of `namespace`, each written `writesPerObject` times, until
 * `size.objects` are written or `size.seconds` have passed (requests in flight then still count).
 */
async function point(target: BenchTarget, namespace: string, size: PointSize, writesPerObject: number, concurrency: number): Promise<CeilingPoint> {
  const base = collection(namespace);
  // As many sockets as requests in flight: the client's default (64) would queue the higher concurrencies.
  const client = new ApiClient(target.kubeConfig, { maxSockets: concurrency });
  const token = `${writesPerObject}w-c${concurrency}-${Date.now()}`;
  try {
    // Open every connection (TLS handshakes) before the clock starts, as an operator's are after its listing.
    const revisions = await Promise.all(Array.from({ length: concurrency }, () => currentRevision(client, base)));
    const start = revisions.reduce((a, b) => (a > b ? a : b));
    const seen = new Set<bigint>();
    let unchangedWrites = 0;
    const check = (written: Written): void => {
      const revision = BigInt(written.metadata?.resourceVersion ?? '0');
      if (revision <= start || seen.has(revision)) unchangedWrites += 1;
      seen.add(revision);
    };
    let next = 0;
    let written = 0;
    const started = performance.now();
    const worker = async (): Promise<void> => {
      while (next < size.objects && performance.now() - started < size.seconds * 1000) {
        const i = next++;
        const status = { ceiling: token, startedAt: Date.now() };
        check(await client.request<Written>('PATCH', `${base}/o-${i}/status`, { body: { status }, contentType: 'application/merge-patch+json' }));
        for (let w = 1; w < writesPerObject; w++) {
          // Bookkeeping about as large as the framework's diff-base annotation of a bench object.
          const annotations = { [`bench.konductor.dev/ceiling-${w}`]: JSON.stringify({ spec: { idx: i }, token }) };
          check(await client.request<Written>('PATCH', `${base}/o-${i}`, { body: { metadata: { annotations } }, contentType: 'application/merge-patch+json' }));
        }
        written += 1;
      }
    };
    const measured = await measure(target.kubeConfig, () => Promise.all(Array.from({ length: concurrency }, worker)));
    return { writesPerObject, concurrency, objects: written, seconds: measured.seconds, objectsPerSecond: written / measured.seconds, unchangedWrites, measured };
  } finally {
    client.close();
  }
}

/**
 * Sweeps the ceiling for each of `writeCounts` writes per object over {@link CEILING_CONCURRENCIES}, every
 * point on the same existing objects (`o-<i>` in `namespace`), every write changing them. The
 * points alternate between the write counts at each concurrency, so a machine growing busier or quieter
 * during the sweep shifts all of them alike rather than one write count's.
 */
export async function sweepCeilings(target: BenchTarget, namespace: string, size: PointSize, writeCounts: readonly number[]): Promise<CeilingSweep[]> {
  const points = new Map<number, CeilingPoint[]>(writeCounts.map((w) => [w, []]));
  for (const concurrency of CEILING_CONCURRENCIES) {
    for (const [writesPerObject, done] of points) done.push(await point(target, namespace, size, writesPerObject, concurrency));
  }
  return [...points].map(([writesPerObject, done]) => ({ writesPerObject, points: done, best: done.reduce((a, b) => (b.objectsPerSecond > a.objectsPerSecond ? b : a)) }));
}
