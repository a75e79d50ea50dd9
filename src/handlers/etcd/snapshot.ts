import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { errorMessage, withEtcd, EtcdClient } from './etcd-client.js';

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
export async function bestEndpoint(endpoints: string[]): Promise<{ endpoint: string; revision: string; version: string }> {
  const probes = await Promise.allSettled(endpoints.map((endpoint) => withEtcd([endpoint], (etcd) => etcd.status()).then((s) => ({ endpoint, ...s }))));
  let best: { endpoint: string; revision: string; version: string } | undefined;
  const failures: string[] = [];
  probes.forEach((probe, i) => {
    if (probe.status === 'rejected') {
      failures.push(`${endpoints[i]}: ${errorMessage(probe.reason)}`);
      return;
    }
    if (!best || BigInt(probe.value.revision) > BigInt(best.revision)) best = probe.value;
  });
  if (!best) throw new Error(`no etcd endpoint answered (${failures.join('; ') || 'no endpoints'}): check etcdEndpoints and that the cluster runs`);
  return best;
}

/**
 * Streams a snapshot from the best endpoint into `file` and checks its SHA-256 trailer, so a cut
 * stream never passes for a backup.
 */
export async function takeSnapshot(endpoints: string[], file: string, timeoutMs: number): Promise<Snapshot> {
  const { endpoint, version } = await bestEndpoint(endpoints);
  const client = new EtcdClient([endpoint]);
  try {
    // The stream carries no revision on etcd 3.4, so it is read before and after: when they agree, the
    // snapshot holds exactly that revision. Under constant writes, the last try records the lower bound.
    let snapshot: Snapshot | undefined;
    for (let attempt = 1; attempt <= SNAPSHOT_ATTEMPTS && !snapshot; attempt++) {
      const before = (await client.status()).revision;
      const bytes = await streamSnapshot(client, endpoint, file, timeoutMs);
      const after = (await client.status()).revision;
      if (before === after || attempt === SNAPSHOT_ATTEMPTS) snapshot = { endpoint, revision: before, version, bytes };
    }
    return snapshot!;
  } finally {
    client.close();
  }
}

const SNAPSHOT_ATTEMPTS = 3;

/** Streams one snapshot into `file`; returns its size. */
async function streamSnapshot(client: EtcdClient, endpoint: string, file: string, timeoutMs: number): Promise<number> {
  const stream = await client.raw.maintenance.snapshot({ deadline: Date.now() + timeoutMs });
  const out = createWriteStream(file);
  const hash = createHash('sha256');
  let bytes = 0;
  let tail = Buffer.alloc(0);
  await new Promise<void>((resolve, reject) => {
    const fail = (error: Error): void => {
      out.destroy();
      reject(new Error(`snapshot from ${endpoint} failed: ${error.message}`, { cause: error }));
    };
    stream.on('data', (chunk) => {
      const blob = chunk.blob;
      bytes += blob.length;
      // Hash everything but the last 32 bytes, which are the digest itself.
      const joined = Buffer.concat([tail, blob]);
      const cut = Math.max(0, joined.length - 32);
      hash.update(joined.subarray(0, cut));
      tail = joined.subarray(cut);
      // No back-pressure through the gRPC stream wrapper; the file is local, so buffering is brief.
      out.write(blob);
    });
    stream.on('error', fail);
    stream.on('end', () => out.end((error?: Error | null) => (error ? fail(error) : resolve())));
    out.on('error', fail);
  });
  if (tail.length !== 32 || !hash.digest().equals(tail)) {
    throw new Error(`snapshot from ${endpoint} is incomplete or corrupt (${bytes} bytes, checksum mismatch)`);
  }
  return bytes;
}
