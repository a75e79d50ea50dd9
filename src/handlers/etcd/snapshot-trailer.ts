import { createHash, type Hash } from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';

/** What identifies one snapshot: its size and its SHA-256 trailer (hex), the digest of everything before it. */
export interface SnapshotFingerprint {
  size: number;
  sha256: string;
}

const TRAILER = 32;

/** A snapshot whose trailer does not match its contents (cut short, corrupt, or not a snapshot at all). */
export class CorruptSnapshotError extends Error {
  override readonly name = 'CorruptSnapshotError';
}

/**
 * Passes a snapshot through, holding back its last 32 bytes (the SHA-256 trailer etcd appends)
 * until the rest has been hashed: the trailer goes out only when it matches, and, when `expected` is
 * given, only when size and digest are the ones recorded. Otherwise the stream fails before its
 * last bytes, so a reader (wget, `etcdctl snapshot restore`) never takes a bad or swapped file
 * for a complete one.
 */
export class SnapshotTrailerCheck extends Transform {
  private readonly hash: Hash = createHash('sha256');
  private tail = Buffer.alloc(0);
  private bytes = 0;
  private result: SnapshotFingerprint | undefined;

  constructor(private readonly expected?: SnapshotFingerprint) {
    super();
  }

  /** Size and digest, once the stream has ended successfully. */
  get fingerprint(): SnapshotFingerprint | undefined {
    return this.result;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    const joined = Buffer.concat([this.tail, chunk]);
    const cut = Math.max(0, joined.length - TRAILER);
    const body = joined.subarray(0, cut);
    this.hash.update(body);
    this.tail = Buffer.from(joined.subarray(cut));
    callback(null, body.length > 0 ? body : undefined);
  }

  override _flush(callback: TransformCallback): void {
    const digest = this.hash.digest();
    if (this.tail.length !== TRAILER || !digest.equals(this.tail)) {
      callback(
        new CorruptSnapshotError(
          `not a complete etcd snapshot: ${this.bytes} bytes whose SHA-256 trailer does not match`,
        ),
      );
      return;
    }
    const fingerprint = { size: this.bytes, sha256: this.tail.toString('hex') };
    if (
      this.expected &&
      (this.expected.size !== fingerprint.size || this.expected.sha256 !== fingerprint.sha256)
    ) {
      callback(
        new CorruptSnapshotError(
          `the backup changed since the restore checked it (${this.expected.size} bytes then, ${fingerprint.size} now, or another digest)`,
        ),
      );
      return;
    }
    this.result = fingerprint;
    callback(null, this.tail);
  }
}

/** Reads a whole snapshot stream and checks its trailer; throws {@link CorruptSnapshotError} when it does not match. */
export async function fingerprintSnapshot(stream: Readable): Promise<SnapshotFingerprint> {
  const check = new SnapshotTrailerCheck();
  stream.once('error', (error) => check.destroy(error));
  try {
    for await (const chunk of stream.pipe(check)) void chunk;
  } finally {
    stream.destroy();
  }
  return check.fingerprint!;
}
