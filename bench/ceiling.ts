// The ceiling: the best a plain client (the framework's bare HTTP client, no framework) can do on this
// control plane, making k API writes per object: a status PATCH (the handler's result), then k − 1
// metadata PATCHes the size of a diff-base annotation; with k = 1 that bookkeeping rides in the status
// PATCH, as status storage's does. It sweeps the client's concurrency and keeps the best point, so the
// ceiling is never held down by a concurrency that suits this control plane worse than the operator's.
//
// Every point writes objects nothing has written since they were created, as the operator's catch-up
// does. A write costs the API server more the larger the object it changes (decoding, managed fields,
// encoding, etcd): measured here, a 1-write point made 617 objects/s on new objects and 236–296 on the
// same objects once an operator and earlier points had written them, and the 2-write ceiling swept
// after the operator came out below it. So the sweep takes its objects from a {@link CeilingPool} of new
// objects, created alongside the operator's before anything is handled.
//
// Every write in the sweep changes the object (a merge PATCH that changes nothing costs the API server
// less and would flatter the ceiling): each point writes its own token, and this is checked, not
// assumed. Resource versions are etcd revisions: a write that changed the object answers with a
// revision newer than the point's start (read just before it) and unique within the point; a no-op
// answers with the object's old one. Writes failing that check are counted in `unchangedWrites`.
import { ApiClient } from '../src/framework/api/api-client.js';
import {
  collection,
  createObjects,
  measure,
  PlainWatch,
  type BenchTarget,
  type Measured,
} from './support.js';

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

/** How much one sweep point writes: at most `objects` new objects, for at most about `seconds`. */
export interface PointSize {
  objects: number;
  seconds: number;
}

/**
 * New bench objects for the sweep, in one namespace, handed out so that no two points write the same
 * object. {@link reserve} creates objects for the points known up front, before the operators run, so
 * the ceiling's objects meet the control plane in the state the operator's did; a sweep needing more
 * than that creates them when it starts.
 */
export class CeilingPool {
  private created = 0;
  private taken = 0;
  private batches = 0;
  private readonly names: string[] = [];

  constructor(
    private readonly target: BenchTarget,
    readonly namespace: string,
  ) {}

  /** Ensures at least `count` objects not yet handed out exist; returns the seconds creating them took. */
  async reserve(count: number): Promise<number> {
    const missing = count - (this.created - this.taken);
    if (missing <= 0) return 0;
    // A batch of its own name prefix, so later batches never collide with earlier names.
    const prefix = `c${this.batches++}`;
    const seconds = await createObjects(this.target.kubeConfig, this.namespace, missing, prefix);
    for (let i = 0; i < missing; i++) this.names.push(`${prefix}-${i}`);
    this.created += missing;
    return seconds;
  }

  /** The next `count` objects no point has written yet (reserve them first). */
  take(count: number): string[] {
    if (this.taken + count > this.created)
      throw new Error(
        `ceiling pool ${this.namespace}: ${count} objects wanted, ${this.created - this.taken} left`,
      );
    const names = this.names.slice(this.taken, this.taken + count);
    this.taken += count;
    return names;
  }
}

/** The objects a sweep of `writeCounts` write counts takes from its pool: one point per count and concurrency. */
export function sweepObjects(writeCounts: number, size: PointSize): number {
  return writeCounts * CEILING_CONCURRENCIES.length * size.objects;
}

/**
 * One sweep point: `names` (new objects of `namespace`), each written `writesPerObject` times, until
 * all are written or `seconds` have passed (requests in flight then still count).
 */
async function point(
  target: BenchTarget,
  namespace: string,
  names: readonly string[],
  seconds: number,
  writesPerObject: number,
  concurrency: number,
): Promise<CeilingPoint> {
  const base = collection(namespace);
  // As many sockets as requests in flight: the client's default (64) would queue the higher concurrencies.
  const client = new ApiClient(target.kubeConfig, { maxSockets: concurrency });
  const token = `${writesPerObject}w-c${concurrency}-${Date.now()}`;
  try {
    // Open every connection (TLS handshakes) before the clock starts, as an operator's are after its listing.
    const revisions = await Promise.all(
      Array.from({ length: concurrency }, () => currentRevision(client, base)),
    );
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
      while (next < names.length && performance.now() - started < seconds * 1000) {
        const i = next++;
        const name = names[i]!;
        // Bookkeeping about as large as the framework's diff-base of a bench object.
        const bookkeeping = JSON.stringify({ spec: { idx: i }, token });
        const status = {
          ceiling: token,
          startedAt: Date.now(),
          ...(writesPerObject === 1 ? { bookkeeping } : {}),
        };
        check(
          await client.request<Written>('PATCH', `${base}/${name}/status`, {
            body: { status },
            contentType: 'application/merge-patch+json',
          }),
        );
        for (let w = 1; w < writesPerObject; w++) {
          const annotations = { [`bench.konductor.dev/ceiling-${w}`]: bookkeeping };
          check(
            await client.request<Written>('PATCH', `${base}/${name}`, {
              body: { metadata: { annotations } },
              contentType: 'application/merge-patch+json',
            }),
          );
        }
        written += 1;
      }
    };
    const measured = await measure(target.kubeConfig, () =>
      Promise.all(Array.from({ length: concurrency }, worker)),
    );
    return {
      writesPerObject,
      concurrency,
      objects: written,
      seconds: measured.seconds,
      objectsPerSecond: written / measured.seconds,
      unchangedWrites,
      measured,
    };
  } finally {
    client.close();
  }
}

/**
 * Sweeps the ceiling for each of `writeCounts` writes per object over {@link CEILING_CONCURRENCIES}, every
 * point on `size.objects` new objects of its own from `pool`, every write changing them. The points
 * alternate between the write counts at each concurrency, so a machine growing busier or quieter
 * during the sweep shifts all of them alike rather than one write count's.
 */
export async function sweepCeilings(
  target: BenchTarget,
  pool: CeilingPool,
  size: PointSize,
  writeCounts: readonly number[],
): Promise<CeilingSweep[]> {
  await pool.reserve(sweepObjects(writeCounts.length, size));
  const points = new Map<number, CeilingPoint[]>(writeCounts.map((w) => [w, []]));
  for (const concurrency of CEILING_CONCURRENCIES) {
    for (const [writesPerObject, done] of points)
      done.push(
        await point(
          target,
          pool.namespace,
          pool.take(size.objects),
          size.seconds,
          writesPerObject,
          concurrency,
        ),
      );
  }
  return [...points].map(([writesPerObject, done]) => ({
    writesPerObject,
    points: done,
    best: done.reduce((a, b) => (b.objectsPerSecond > a.objectsPerSecond ? b : a)),
  }));
}

/**
 * One point as {@link sweepCeilings} makes them, at `concurrency`, with a plain watch of the pool's
 * namespace open (listed before the clock starts): every write then also costs the API server a watch
 * event, as each of an operator's writes does (the echo of its own write). Not a ceiling but what an
 * operator cannot avoid: how far below the ceiling that alone puts any operator on this control plane.
 */
export async function watchedPoint(
  target: BenchTarget,
  pool: CeilingPool,
  size: PointSize,
  writesPerObject: number,
  concurrency: number,
): Promise<CeilingPoint> {
  await pool.reserve(size.objects);
  const watch = new PlainWatch(target.kubeConfig, pool.namespace);
  try {
    await watch.listed;
    return await point(
      target,
      pool.namespace,
      pool.take(size.objects),
      size.seconds,
      writesPerObject,
      concurrency,
    );
  } finally {
    watch.stop();
  }
}
