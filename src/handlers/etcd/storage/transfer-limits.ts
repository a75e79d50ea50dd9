import { Transform, type Readable, type TransformCallback } from 'node:stream';

/**
 * Every transfer of a snapshot (an S3 download or upload, a snapshot from etcd) ends within this
 * base time plus {@link SECONDS_PER_GIB} per GiB: a server that drips one byte a minute never trips
 * an idle timeout, so only a total deadline stops it from holding a handler slot for good.
 */
export const TRANSFER_BASE_DEADLINE_MS = 10 * 60_000;
/** Extra time per GiB of a transfer of known size: 1024 s, i.e. the transfer must move at least 1 MiB/s. */
export const SECONDS_PER_GIB = 1024;
/** Default upper bound of one snapshot or backup file: 8 GiB, etcd's largest supported database. */
export const DEFAULT_MAX_SNAPSHOT_BYTES = 8 * 1024 ** 3;
/** Overrides {@link DEFAULT_MAX_SNAPSHOT_BYTES} (a whole number of bytes). */
export const MAX_SNAPSHOT_BYTES_ENV = 'KONDUCTOR_MAX_SNAPSHOT_BYTES';

/** The size limit in force: `KONDUCTOR_MAX_SNAPSHOT_BYTES` when it is a positive whole number, else 8 GiB. */
export function maxSnapshotBytes(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env[MAX_SNAPSHOT_BYTES_ENV]);
  return Number.isSafeInteger(value) && value > 0 ? value : DEFAULT_MAX_SNAPSHOT_BYTES;
}

/** The total deadline of a transfer of `bytes` (unknown: the base), never more than a day. */
export function transferDeadlineMs(bytes?: number, baseMs = TRANSFER_BASE_DEADLINE_MS): number {
  const extra =
    bytes !== undefined && Number.isFinite(bytes) && bytes > 0
      ? Math.ceil((bytes / 1024 ** 3) * SECONDS_PER_GIB * 1000)
      : 0;
  return Math.min(baseMs + extra, 24 * 3_600_000);
}

/** A transfer past its size limit or deadline. */
export class TransferLimitError extends Error {
  override readonly name = 'TransferLimitError';
}

/** Limits of {@link limitTransfer}. */
export interface TransferLimits {
  maxBytes: number;
  deadlineMs: number;
  /** What is transferred, for the error: e.g. `s3://bucket/key`. */
  what: string;
}

/**
 * Passes `source` through, failing (and destroying `source`) once more than `maxBytes` went by or
 * `deadlineMs` passed since the call, whichever comes first.
 */
export function limitTransfer(source: Readable, limits: TransferLimits): Readable {
  let bytes = 0;
  const fail = (message: string): TransferLimitError =>
    new TransferLimitError(`${limits.what}: ${message}`);
  const limited = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
      bytes += chunk.length;
      if (bytes > limits.maxBytes)
        callback(
          fail(
            `more than ${limits.maxBytes} bytes (the snapshot size limit, ${MAX_SNAPSHOT_BYTES_ENV})`,
          ),
        );
      else callback(null, chunk);
    },
  });
  const timer = setTimeout(
    () =>
      limited.destroy(
        fail(
          `not complete after ${Math.round(limits.deadlineMs / 1000)} s (the transfer deadline)`,
        ),
      ),
    Math.min(limits.deadlineMs, 2 ** 31 - 1),
  );
  timer.unref();
  limited.once('close', () => {
    clearTimeout(timer);
    source.destroy();
  });
  source.once('error', (error) => limited.destroy(error));
  return source.pipe(limited);
}
