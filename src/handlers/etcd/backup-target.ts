import { join, posix } from 'node:path';
import { ApiError, type ApiClient, type KubeObject } from 'konductor';
import { isObjectName } from './object-names.js';
import {
  LocalStorage,
  parseAwsSecret,
  s3Path,
  S3Storage,
  type BackupStorage,
} from './storage/index.js';
import type { LocalSource, S3Source, StorageType } from './types.js';

/** A spec that cannot work as written; reported in status and an Event, never retried until it changes. */
export class InvalidSpecError extends Error {
  override readonly name = 'InvalidSpecError';
}

/** Where backups of one EtcdBackup or EtcdRestore live: a storage and the name (or prefix) in it. */
export interface BackupTarget {
  storage: BackupStorage;
  /** `s3.path`'s key or `local.path`: the object name (one-shot, restore) or the prefix of periodic names. */
  path: string;
  /** Releases connections (S3). */
  close(): void;
}

export interface StorageSpec {
  storageType: StorageType | string | undefined;
  s3?: S3Source;
  local?: LocalSource;
}

/**
 * Builds the storage a spec names. Unknown types, missing sections and missing or malformed
 * credential Secrets are {@link InvalidSpecError}s naming the field or Secret to fix.
 * @param localRoot the directory under which each namespace's `Local` backups have a folder, `<localRoot>/<namespace>/` (a PVC mounted into the operator).
 */
export async function backupTarget(
  client: ApiClient,
  namespace: string,
  spec: StorageSpec,
  localRoot: string,
): Promise<BackupTarget> {
  if (spec.storageType === 'Local') {
    if (!spec.local?.path) throw new InvalidSpecError('storageType Local needs spec.local.path');
    // Each namespace has a folder of its own: no path one tenant writes reaches another's backups.
    if (!isObjectName(namespace) || namespace.includes('.'))
      throw new InvalidSpecError(`namespace ${JSON.stringify(namespace)} is not a DNS-1123 label`);
    const rel = posix.normalize(spec.local.path.replace(/^\/+/, ''));
    if (rel === '..' || rel.startsWith('../'))
      throw new InvalidSpecError(
        `spec.local.path ${JSON.stringify(spec.local.path)} climbs out of this namespace's backup folder with ".."`,
      );
    return {
      storage: new LocalStorage(join(localRoot, namespace)),
      path: spec.local.path.replace(/^\/+/, ''),
      close: () => undefined,
    };
  }
  if (spec.storageType === 'S3') {
    const s3 = spec.s3;
    if (!s3?.path || !s3.awsSecret)
      throw new InvalidSpecError(
        'storageType S3 needs spec.s3.path ("bucket/key") and spec.s3.awsSecret',
      );
    let location: { bucket: string; key: string };
    try {
      location = s3Path(s3.path);
    } catch (error) {
      throw new InvalidSpecError((error as Error).message);
    }
    const secret = await client
      .resource<KubeObject & { data?: Record<string, string> }>('v1', 'secrets')
      .get({ namespace, name: s3.awsSecret })
      .catch((error: unknown) => {
        if (ApiError.isNotFound(error)) {
          throw new InvalidSpecError(
            `the credentials Secret ${namespace}/${s3.awsSecret} (spec.s3.awsSecret) does not exist: create it with a "credentials" key`,
          );
        }
        throw error;
      });
    let contents: ReturnType<typeof parseAwsSecret>;
    try {
      contents = parseAwsSecret(secret.data, `${namespace}/${s3.awsSecret}`);
    } catch (error) {
      throw new InvalidSpecError((error as Error).message);
    }
    const storage = new S3Storage({
      bucket: location.bucket,
      endpoint: s3.endpoint ?? undefined,
      forcePathStyle: s3.forcePathStyle,
      region: contents.region,
      credentials: contents.credentials,
    });
    return { storage, path: location.key, close: () => storage.destroy() };
  }
  throw new InvalidSpecError(
    `unknown storage type ${JSON.stringify(spec.storageType)}: use S3 or Local`,
  );
}
