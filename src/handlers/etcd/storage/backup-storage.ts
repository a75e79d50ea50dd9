import type { Readable } from 'node:stream';

/** One complete object in backup storage. */
export interface StoredBackup {
  /** The name as passed to {@link BackupStorage.write} (an S3 key, or a path relative to the local root). */
  name: string;
  /** Bytes. */
  size: number;
  modified: Date;
}

/**
 * Where etcd snapshots go (the original's writer interface, plus `read` for restores). Names are
 * opaque to the storage; `backup-names.ts` gives them meaning.
 */
export interface BackupStorage {
  /**
   * Stores the file at `localPath` as `name`, atomically: readers and {@link list} never see a partial object.
   * With an `owner`, storages that record owners refuse to replace an object someone else wrote.
   */
  write(name: string, localPath: string, options?: OwnerOption): Promise<void>;
  /** Complete objects whose name starts with `prefix` (a plain string prefix, as in S3). */
  list(prefix: string): Promise<StoredBackup[]>;
  /**
   * Streams an object. Throws {@link BackupNotFoundError} when it does not exist. The caller must
   * consume or destroy the stream, or the file handle / connection stays open.
   */
  read(name: string): Promise<Readable>;
  /**
   * Deletes an object; deleting one that does not exist is not an error. With an `owner`, storages
   * that record owners leave an object someone else wrote alone (and return false).
   */
  delete(name: string, options?: OwnerOption): Promise<boolean>;
  /** Where `name` is stored, for logs and status: e.g. `s3://bucket/key` or an absolute file path. */
  describe(name: string): string;
}

/** Who writes or deletes: e.g. `EtcdBackup nightly`. */
export interface OwnerOption {
  owner?: string;
}

/** A write that would replace an object its writer did not create. */
export class NotOwnerError extends Error {
  override readonly name = 'NotOwnerError';
}

/** {@link BackupStorage.read} of an object that does not exist; lets an HTTP handler answer 404 rather than 500. */
export class BackupNotFoundError extends Error {
  override readonly name = 'BackupNotFoundError';

  /** @param location the object's {@link BackupStorage.describe} text. */
  constructor(
    readonly location: string,
    options?: ErrorOptions,
  ) {
    super(`backup ${location} does not exist`, options);
  }
}
