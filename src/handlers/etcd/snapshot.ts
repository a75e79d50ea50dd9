import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { errorMessage, withEtcd, EtcdClient } from './etcd-client.js';
import type { ClientCredentials } from './tls-secrets.js';
import { MAX_SNAPSHOT_BYTES_ENV, maxSnapshotBytes } from './storage/transfer-limits.js';

/** What a snapshot file holds and where it came from. */
export interface Snapshot {
  endpoint: string;
  /** The revision of the endpoint just before the snapshot (the stream carries no header on etcd 3.4). */
  revision: string;
  version: string;
  bytes: number;
}

/**
 * Probes every endpoint on its own and picks the one with the highest revision. Endpoints that do
 * not answer are skipped (the original failed the whole backup when any one did); only when none
 * answers is it an error, naming each endpoint's failure.
 */
export async function bestEndpoint(
  endpoints: string[],
  credentials?: ClientCredentials,
): Promise<{ endpoint: string; revision: string; version: string }> {
  const probes = await Promise.allSettled(
    endpoints.map((endpoint) =>
      withEtcd([endpoint], (etcd) => etcd.status(), credentials).then((s) => ({ endpoint, ...s })),
    ),
  );
  let best: { endpoint: string; revision: string; version: string } | undefined;
  const failures: string[] = [];
  probes.forEach((probe, i) => {
    if (probe.status === 'rejected') {
      failures.push(`${endpoints[i]}: ${errorMessage(probe.reason)}`);
      return;
    }
    if (!best || BigInt(probe.value.revision) > BigInt(best.revision)) best = probe.value;
  });
  if (!best)
    throw new Error(
      `no etcd endpoint answered (${failures.join('; ') || 'no endpoints'}): check etcdEndpoints and that the cluster runs`,
    );
  return best;
}

/**
 * Streams a snapshot from the best endpoint into `file` and checks its SHA-256 trailer, so a cut
 * stream never passes for a backup. `credentials` when the members serve TLS.
 */
export async function takeSnapshot(
  endpoints: string[],
  file: string,
  timeoutMs: number,
  credentials?: ClientCredentials,
): Promise<Snapshot> {
  const { endpoint, version } = await bestEndpoint(endpoints, credentials);
  const client = new EtcdClient([endpoint], credentials);
  try {
    // The stream carries no revision on etcd 3.4, so it is read before and after: when they agree, the
    // snapshot holds exactly that revision. Under constant writes, the last try records the lower bound.
    let snapshot: Snapshot | undefined;
    for (let attempt = 1; attempt <= SNAPSHOT_ATTEMPTS && !snapshot; attempt++) {
      const before = (await client.status()).revision;
      const bytes = await streamSnapshot(client, endpoint, file, timeoutMs);
      const after = (await client.status()).revision;
      if (before === after || attempt === SNAPSHOT_ATTEMPTS)
        snapshot = { endpoint, revision: before, version, bytes };
    }
    return snapshot!;
  } finally {
    client.close();
  }
}

const SNAPSHOT_ATTEMPTS = 3;

/** Streams one snapshot into `file`; returns its size. */
async function streamSnapshot(
  client: EtcdClient,
  endpoint: string,
  file: string,
  timeoutMs: number,
): Promise<number> {
  const stream = await client.raw.maintenance.snapshot({ deadline: Date.now() + timeoutMs });
  // etcd3 types the stream by its events only; at run time it is grpc-js's ClientReadableStream (a Readable with cancel()).
  return writeSnapshot(stream as unknown as SnapshotSource, file, {
    what: `snapshot from ${endpoint}`,
    maxBytes: maxSnapshotBytes(),
  });
}

/** A snapshot stream as gRPC hands it out: `{ blob }` messages, pausable, cancellable. */
export interface SnapshotSource {
  on(event: 'data', listener: (chunk: { blob: Buffer }) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  pause(): unknown;
  resume(): unknown;
  /** gRPC calls are cancelled; plain streams destroyed. */
  cancel?(): void;
  destroy?(): void;
}

/**
 * Writes a snapshot stream to `file` with back-pressure (the source pauses while the disk catches
 * up, so a fast etcd never piles the database up in memory), at most `maxBytes` (default 8 GiB,
 * `KONDUCTOR_MAX_SNAPSHOT_BYTES`), and checks its SHA-256 trailer, so a cut stream never passes for
 * a backup. Returns the size.
 */
export async function writeSnapshot(
  source: SnapshotSource,
  file: string,
  options: { what: string; maxBytes: number },
): Promise<number> {
  const out = createWriteStream(file);
  const hash = createHash('sha256');
  let bytes = 0;
  let tail = Buffer.alloc(0);
  const stop = (): void => {
    if (source.cancel) source.cancel();
    else source.destroy?.();
  };
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (error: Error): void => {
      if (failed) return;
      failed = true;
      out.destroy();
      stop();
      reject(new Error(`${options.what} failed: ${error.message}`, { cause: error }));
    };
    source.on('data', (chunk) => {
      if (failed) return;
      const blob = chunk.blob;
      bytes += blob.length;
      if (bytes > options.maxBytes) {
        fail(
          new Error(
            `more than ${options.maxBytes} bytes, the snapshot size limit (${MAX_SNAPSHOT_BYTES_ENV})`,
          ),
        );
        return;
      }
      // Hash everything but the last 32 bytes, which are the digest itself.
      const joined = Buffer.concat([tail, blob]);
      const cut = Math.max(0, joined.length - 32);
      hash.update(joined.subarray(0, cut));
      tail = joined.subarray(cut);
      if (!out.write(blob)) {
        source.pause();
        out.once('drain', () => source.resume());
      }
    });
    source.on('error', fail);
    source.on('end', () => {
      if (!failed) out.end((error?: Error | null) => (error ? fail(error) : resolve()));
    });
    out.on('error', fail);
  });
  if (tail.length !== 32 || !hash.digest().equals(tail)) {
    throw new Error(`${options.what} is incomplete or corrupt (${bytes} bytes, checksum mismatch)`);
  }
  return bytes;
}
