import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { ListObjectsV2CommandOutput } from '@aws-sdk/client-s3';
import { BackupNotFoundError } from './backup-storage.js';
import {
  limitTransfer,
  maxSnapshotBytes,
  TRANSFER_BASE_DEADLINE_MS,
  transferDeadlineMs,
  TransferLimitError,
} from './transfer-limits.js';
import type { BackupStorage, StoredBackup } from './backup-storage.js';

/** Static AWS credentials, as in the `[default]` profile of a shared-credentials file. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** Where and how {@link S3Storage} connects. */
export interface S3StorageOptions {
  bucket: string;
  /** An S3-compatible endpoint (MinIO, Ceph, ...); absent: AWS for `region`. */
  endpoint?: string;
  /** `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key`; most non-AWS endpoints need it. */
  forcePathStyle?: boolean;
  /** Default `us-east-1`. */
  region?: string;
  credentials: S3Credentials;
  /** Keys per ListObjectsV2 page; S3 caps it at 1000 (the default). Small values exercise pagination in tests. */
  pageSize?: number;
  /** Tries per upload for transient failures (5xx, throttling, dropped connections); default 3. */
  uploadAttempts?: number;
  /** Milliseconds to establish a connection; default 10 s. */
  connectTimeoutMs?: number;
  /** Milliseconds a request may sit without any data moving before it fails; default 60 s. */
  requestTimeoutMs?: number;
  /** Base total deadline of any call, a transfer's grows with its size ({@link transferDeadlineMs}); default {@link TRANSFER_BASE_DEADLINE_MS}. */
  deadlineMs?: number;
  /** Largest object read or written; default {@link maxSnapshotBytes}. */
  maxBytes?: number;
}

/** Without these the SDK waits forever on an endpoint that accepts a connection and never answers. */
export const S3_CONNECT_TIMEOUT_MS = 10_000;
export const S3_REQUEST_TIMEOUT_MS = 60_000;

/** A single PUT may not exceed 5 GiB; larger objects need a multipart upload. */
const MAX_PUT_BYTES = 5 * 1024 ** 3;

/**
 * Backups as objects in one S3 bucket; names are keys. Each write is one PutObject, which S3 makes
 * visible only once complete, so an interrupted upload leaves nothing behind.
 */
export class S3Storage implements BackupStorage {
  readonly bucket: string;
  private readonly client: S3Client;
  private readonly pageSize: number | undefined;
  private readonly uploadAttempts: number;
  private readonly endpoint: string;
  private readonly deadlineMs: number;
  private readonly maxBytes: number;

  constructor(options: S3StorageOptions) {
    if (!options.bucket) throw new Error('S3 bucket name is empty');
    this.bucket = options.bucket;
    this.pageSize = options.pageSize;
    this.uploadAttempts = Math.max(1, options.uploadAttempts ?? 3);
    this.endpoint = options.endpoint ?? `AWS S3 (${options.region ?? 'us-east-1'})`;
    this.deadlineMs = options.deadlineMs ?? TRANSFER_BASE_DEADLINE_MS;
    this.maxBytes = options.maxBytes ?? maxSnapshotBytes();
    this.client = new S3Client({
      region: options.region ?? 'us-east-1',
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      credentials: options.credentials,
      // Newer SDKs otherwise send uploads as aws-chunked bodies with CRC trailers; S3-compatible
      // servers that do not understand them (s3rver, older MinIO/Ceph) store the framing as data.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // The SDK cannot retry a streamed body and says so on the console; write() retries itself.
      logger: SILENT,
      // socketTimeout is an idle timeout: a long upload that keeps moving is never cut.
      requestHandler: {
        connectionTimeout: options.connectTimeoutMs ?? S3_CONNECT_TIMEOUT_MS,
        socketTimeout: options.requestTimeoutMs ?? S3_REQUEST_TIMEOUT_MS,
      },
    });
  }

  /** Uploads with one PutObject of a file stream, reopening the file for each retry (a consumed stream cannot be resent). */
  async write(name: string, localPath: string): Promise<void> {
    const key = checkKey(name);
    let size: number;
    try {
      size = (await stat(localPath)).size;
    } catch (error) {
      throw new Error(`cannot upload ${localPath} to ${this.describe(key)}: ${messageOf(error)}`, {
        cause: error,
      });
    }
    if (size > MAX_PUT_BYTES) {
      throw new Error(
        `cannot upload ${localPath} to ${this.describe(key)}: ${size} bytes exceeds the 5 GiB limit of a single S3 PUT`,
      );
    }
    if (size > this.maxBytes)
      throw new TransferLimitError(
        `cannot upload ${localPath} to ${this.describe(key)}: ${size} bytes exceeds the snapshot size limit of ${this.maxBytes}`,
      );
    // One deadline for all attempts: an endpoint that reads a byte a minute cannot hold the handler.
    const deadline = AbortSignal.timeout(transferDeadlineMs(size, this.deadlineMs));
    for (let attempt = 1; ; attempt++) {
      const body = createReadStream(localPath);
      try {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: size }),
          { abortSignal: deadline },
        );
        return;
      } catch (error) {
        if (attempt >= this.uploadAttempts || deadline.aborted || !isTransient(error))
          throw this.failure('upload', key, error);
        await sleep(200 * 2 ** (attempt - 1));
      } finally {
        body.destroy();
      }
    }
  }

  /** Every page of ListObjectsV2 for `prefix`. */
  async list(prefix: string): Promise<StoredBackup[]> {
    const found: StoredBackup[] = [];
    let token: string | undefined;
    do {
      let page: ListObjectsV2CommandOutput;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: prefix,
            ContinuationToken: token,
            MaxKeys: this.pageSize,
          }),
          { abortSignal: AbortSignal.timeout(this.deadlineMs) },
        );
      } catch (error) {
        throw this.failure('list', `${prefix}*`, error);
      }
      for (const object of page.Contents ?? []) {
        if (object.Key === undefined) continue;
        found.push({
          name: object.Key,
          size: object.Size ?? 0,
          modified: object.LastModified ?? new Date(0),
        });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return found;
  }

  /** GetObject's body; throws {@link BackupNotFoundError} when the key (not the bucket) is missing. */
  async read(name: string): Promise<Readable> {
    const key = checkKey(name);
    try {
      const started = Date.now();
      // The answer must start within the base deadline; the body then has its own, by size.
      const headers = new AbortController();
      const timer = setTimeout(
        () =>
          headers.abort(
            new TransferLimitError(`no answer within ${Math.round(this.deadlineMs / 1000)} s`),
          ),
        this.deadlineMs,
      );
      const output = await this.client
        .send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
          abortSignal: headers.signal,
        })
        .finally(() => clearTimeout(timer));
      // In Node the body is an IncomingMessage (a Readable) with SDK mixins.
      if (!(output.Body instanceof Readable)) throw new Error('the response has no body stream');
      const size = output.ContentLength;
      if (size !== undefined && size > this.maxBytes) {
        output.Body.destroy();
        throw new TransferLimitError(
          `${this.describe(key)} is ${size} bytes, more than the snapshot size limit of ${this.maxBytes}`,
        );
      }
      // The idle timeout never fires while a byte trickles in now and then: the whole body has a deadline and a size cap.
      const remaining = transferDeadlineMs(size, this.deadlineMs) - (Date.now() - started);
      return limitTransfer(output.Body, {
        maxBytes: this.maxBytes,
        deadlineMs: Math.max(1, remaining),
        what: `download of ${this.describe(key)}`,
      });
    } catch (error) {
      if (errorName(error) === 'NoSuchKey')
        throw new BackupNotFoundError(this.describe(key), { cause: error });
      if (error instanceof TransferLimitError) throw error;
      throw this.failure('download', key, error);
    }
  }

  /** One DeleteObject (S3 answers 204 for a missing key). The bucket belongs to the credentials' owner, so no owner check. */
  async delete(name: string): Promise<boolean> {
    const key = checkKey(name);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), {
        abortSignal: AbortSignal.timeout(this.deadlineMs),
      });
    } catch (error) {
      if (errorName(error) === 'NoSuchKey') return true;
      throw this.failure('delete', key, error);
    }
    return true;
  }

  /** `s3://bucket/key`. */
  describe(name: string): string {
    return `s3://${this.bucket}/${name}`;
  }

  /** Releases the HTTP agent's sockets. */
  destroy(): void {
    this.client.destroy();
  }

  /** An error that names the object and says what to check. */
  private failure(action: string, key: string, error: unknown): Error {
    const where = this.describe(key);
    const name = errorName(error);
    const status = error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
    let hint: string;
    switch (name) {
      case 'NoSuchBucket':
        hint = `bucket "${this.bucket}" does not exist at ${this.endpoint}; create it or fix the bucket in the S3 path`;
        break;
      case 'AccessDenied':
      case 'AllAccessDisabled':
        hint = `access denied to bucket "${this.bucket}"; check that the awsSecret's credentials are allowed to ${action} there (IAM and bucket policy)`;
        break;
      case 'InvalidAccessKeyId':
        hint = `${this.endpoint} does not know the access key id; check aws_access_key_id in the awsSecret`;
        break;
      case 'SignatureDoesNotMatch':
        hint = 'the request signature does not match; check aws_secret_access_key in the awsSecret';
        break;
      case 'ExpiredToken':
      case 'InvalidToken':
        hint =
          'the session token is invalid or expired; refresh aws_session_token in the awsSecret';
        break;
      case 'PermanentRedirect':
      case 'AuthorizationHeaderMalformed':
      case 'IllegalLocationConstraintException':
        hint = `bucket "${this.bucket}" is in another region; set region in the awsSecret's config`;
        break;
      default:
        if (name === 'TimeoutError' || networkCode(error) !== undefined) {
          hint = `cannot reach ${this.endpoint}: ${messageOf(error)}`;
        } else {
          hint = `${name ?? 'error'}${status ? ` (HTTP ${status})` : ''}: ${messageOf(error)}`;
        }
    }
    return new Error(`S3 ${action} of ${where} failed: ${hint}`, { cause: error });
  }
}

/**
 * The bucket and key of an S3 `path` as the original API writes it (`bucket/key`; the key may contain `/`).
 * For periodic backups the key is the prefix that names get appended to.
 */
export function s3Path(path: string): { bucket: string; key: string } {
  const slash = path.indexOf('/');
  if (slash < 0)
    throw new Error(`S3 path ${JSON.stringify(path)} must be "bucket/key", but has no "/"`);
  const bucket = path.slice(0, slash);
  const key = path.slice(slash + 1);
  if (!bucket)
    throw new Error(
      `S3 path ${JSON.stringify(path)} must be "bucket/key", but the bucket is empty (leading "/"?)`,
    );
  if (!key)
    throw new Error(`S3 path ${JSON.stringify(path)} must be "bucket/key", but the key is empty`);
  return { bucket, key };
}

/** What {@link parseAwsSecret} finds in an `awsSecret`. */
export interface AwsSecretContents {
  credentials: S3Credentials;
  region?: string;
}

/**
 * Reads the Secret the original API names in `spec.s3.awsSecret`: key `credentials` is an AWS
 * shared-credentials file whose `[default]` profile has `aws_access_key_id`, `aws_secret_access_key`
 * and optionally `aws_session_token`; optional key `config` is an AWS config file whose `[default]`
 * (or `[profile default]`) section may set `region`.
 *
 * @param data the Secret's `.data` (base64 values).
 * @param secretName for error messages.
 */
export function parseAwsSecret(
  data: Record<string, string> | undefined,
  secretName = 'awsSecret',
): AwsSecretContents {
  const file = (key: string): string | undefined => {
    const value = data?.[key];
    return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
  };
  const credentialsFile = file('credentials');
  if (credentialsFile === undefined) {
    throw new Error(
      `Secret ${secretName} has no key "credentials" (an AWS shared-credentials file with a [default] profile)`,
    );
  }
  const profile = parseIni(credentialsFile).get('default');
  if (!profile) throw new Error(`Secret ${secretName} key "credentials" has no [default] profile`);
  const accessKeyId = profile.get('aws_access_key_id');
  const secretAccessKey = profile.get('aws_secret_access_key');
  const missing = [
    !accessKeyId && 'aws_access_key_id',
    !secretAccessKey && 'aws_secret_access_key',
  ].filter(Boolean);
  if (!accessKeyId || !secretAccessKey) {
    throw new Error(
      `Secret ${secretName} key "credentials" [default] profile lacks ${missing.join(' and ')}`,
    );
  }
  const credentials: S3Credentials = { accessKeyId, secretAccessKey };
  const sessionToken = profile.get('aws_session_token');
  if (sessionToken) credentials.sessionToken = sessionToken;

  const configFile = file('config');
  const config = configFile === undefined ? undefined : parseIni(configFile);
  const region = (config?.get('default') ?? config?.get('profile default'))?.get('region');
  return region ? { credentials, region } : { credentials };
}

/** Sections of an INI file: `[name]`, `key = value`, `#`/`;` comment lines. Keys are lower-cased, as the AWS SDKs do. */
function parseIni(text: string): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[\s*([^\]]*?)\s*\]$/.exec(line);
    if (header) {
      const name = header[1]!.replace(/\s+/g, ' ');
      current = sections.get(name) ?? new Map<string, string>();
      sections.set(name, current);
      continue;
    }
    const eq = line.indexOf('=');
    if (eq < 0 || !current) continue;
    current.set(line.slice(0, eq).trim().toLowerCase(), line.slice(eq + 1).trim());
  }
  return sections;
}

function checkKey(name: string): string {
  if (name === '') throw new Error('S3 object key is empty');
  return name;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** Worth another try: the SDK's own verdict, a 5xx or throttling answer, or a dropped connection. */
function isTransient(error: unknown): boolean {
  if (error instanceof S3ServiceException) {
    const status = error.$metadata.httpStatusCode ?? 0;
    return (
      error.$retryable !== undefined ||
      status >= 500 ||
      status === 429 ||
      error.name === 'SlowDown' ||
      error.name === 'RequestTimeout'
    );
  }
  const code = networkCode(error);
  return errorName(error) === 'TimeoutError' || (code !== undefined && code !== 'ENOTFOUND');
}

/**
 * The socket error code of a connection failure. Read from the message too: when the Error comes
 * from another realm (as under jest's VM modules) the SDK's retry step flattens it into a string.
 */
function networkCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
  return messageOf(error)
    .match(/\bE[A-Z_]+\b/g)
    ?.find((word) => NETWORK_CODES.has(word));
}

/** Duck-typed rather than `instanceof Error`, which fails for errors from another realm. */
function errorName(error: unknown): string | undefined {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : undefined;
}

function messageOf(error: unknown): string {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}

const SILENT = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
