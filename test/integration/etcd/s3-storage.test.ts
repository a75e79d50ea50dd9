// S3Storage against a real S3-compatible server (s3rver); needs no Kubernetes.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { BackupNotFoundError } from '../../../src/handlers/etcd/storage/backup-storage.js';
import {
  parseAwsSecret,
  s3Path,
  S3Storage,
} from '../../../src/handlers/etcd/storage/s3-storage.js';
import type { S3StorageOptions } from '../../../src/handlers/etcd/storage/s3-storage.js';
import { startS3Server } from '../../support/s3-server.js';
import type { TestS3Server } from '../../support/s3-server.js';

async function bytes(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const b64 = (text: string): string => Buffer.from(text).toString('base64');

describe('S3Storage against s3rver', () => {
  let server: TestS3Server;
  let dir: string;
  const storages: S3Storage[] = [];

  function storage(overrides: Partial<S3StorageOptions> = {}): S3Storage {
    const s = new S3Storage({
      bucket: 'backups',
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: server.credentials,
      ...overrides,
    });
    storages.push(s);
    return s;
  }

  async function file(content: Buffer | string): Promise<string> {
    const path = join(dir, `f-${randomBytes(4).toString('hex')}`);
    await writeFile(path, content);
    return path;
  }

  beforeAll(async () => {
    server = await startS3Server(['backups']);
    dir = await mkdtemp(join(tmpdir(), 's3-storage-'));
  });

  afterAll(async () => {
    for (const s of storages) s.destroy();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('writes, lists, reads and deletes', async () => {
    const s = storage();
    await s.write('etcd/c1_v5_2024-01-01-00:00:00', await file('snapshot'));
    const listed = await s.list('etcd/c1');
    expect(listed.map(({ name, size }) => ({ name, size }))).toEqual([
      { name: 'etcd/c1_v5_2024-01-01-00:00:00', size: 8 },
    ]);
    expect(listed[0]!.modified.getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect((await bytes(await s.read('etcd/c1_v5_2024-01-01-00:00:00'))).toString()).toBe(
      'snapshot',
    );
    expect(s.describe('etcd/c1_v5_2024-01-01-00:00:00')).toBe(
      's3://backups/etcd/c1_v5_2024-01-01-00:00:00',
    );

    await s.delete('etcd/c1_v5_2024-01-01-00:00:00');
    expect(await s.list('etcd/c1')).toEqual([]);
    await expect(s.delete('etcd/c1_v5_2024-01-01-00:00:00')).resolves.toBe(true);
  });

  it('stores a 5 MB file byte for byte (no aws-chunked framing in the object)', async () => {
    const s = storage();
    const content = randomBytes(5 * 1024 * 1024);
    await s.write('big/snapshot.db', await file(content));
    // With the SDK's default checksum mode s3rver stores the chunk framing too, and the size grows.
    expect((await s.list('big/')).map((b) => b.size)).toEqual([content.length]);
    expect(sha256(await bytes(await s.read('big/snapshot.db')))).toBe(sha256(content));
  });

  it('lists by prefix across several pages', async () => {
    const s = storage({ pageSize: 2 });
    const names = Array.from({ length: 5 }, (_, i) => `paged/c1_v${i + 1}_2024-01-01-00:00:0${i}`);
    for (const name of [...names, 'paged/c2_v1_2024-01-01-00:00:00', 'other/c1'])
      await s.write(name, await file(name));
    expect((await s.list('paged/c1')).map((b) => b.name).sort()).toEqual(names);
    expect(await s.list('paged/none')).toEqual([]);
  });

  it('read of a missing key throws BackupNotFoundError naming bucket and key', async () => {
    const error = await storage()
      .read('etcd/never')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackupNotFoundError);
    expect((error as Error).message).toBe('backup s3://backups/etcd/never does not exist');
  });

  it('a missing bucket gives an error that names the bucket and what to do', async () => {
    const s = storage({ bucket: 'no-such-bucket' });
    const source = await file('x');
    await expect(s.write('k', source)).rejects.toThrow(
      /^S3 upload of s3:\/\/no-such-bucket\/k failed: bucket "no-such-bucket" does not exist at http:\/\/127\.0\.0\.1:\d+; create it/,
    );
    await expect(s.list('k')).rejects.toThrow(/bucket "no-such-bucket" does not exist/);
    // The bucket, not the key, is missing: not a BackupNotFoundError.
    await expect(s.read('k')).rejects.toThrow(
      /S3 download of s3:\/\/no-such-bucket\/k failed: bucket "no-such-bucket" does not exist/,
    );
  });

  it('unknown credentials give an error that points at the awsSecret', async () => {
    const s = storage({ credentials: { accessKeyId: 'WRONG', secretAccessKey: 'x' } });
    await expect(s.list('')).rejects.toThrow(
      /does not know the access key id; check aws_access_key_id in the awsSecret/,
    );
  });

  it('an unreachable endpoint says so', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const s = storage({ endpoint: `http://127.0.0.1:${port}` });
    await expect(s.write('k', await file('x'))).rejects.toThrow(
      /cannot reach http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/,
    );
  });

  it('works with credentials and region parsed from an awsSecret', async () => {
    const secret = parseAwsSecret({
      credentials: b64('[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n'),
      config: b64('[default]\nregion = eu-west-1\n'),
    });
    expect(secret.region).toBe('eu-west-1');
    const { bucket, key } = s3Path('backups/from-secret/c1');
    const s = storage({ bucket, credentials: secret.credentials, region: secret.region });
    await s.write(key, await file('ok'));
    expect((await bytes(await s.read(key))).toString()).toBe('ok');
  });
});

describe('S3Storage upload retries', () => {
  it('resends the whole file from a fresh stream after a transient 503', async () => {
    const bodies: Buffer[] = [];
    const fake = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(Buffer.concat(chunks));
        if (bodies.length === 1) {
          res.writeHead(503, { 'content-type': 'application/xml' });
          res.end(
            '<?xml version="1.0"?><Error><Code>ServiceUnavailable</Code><Message>busy</Message></Error>',
          );
        } else {
          res.writeHead(200, { etag: '"x"' });
          res.end();
        }
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const dir = await mkdtemp(join(tmpdir(), 's3-retry-'));
    const s = new S3Storage({
      bucket: 'b',
      endpoint: `http://127.0.0.1:${(fake.address() as AddressInfo).port}`,
      forcePathStyle: true,
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
    try {
      const content = randomBytes(300_000);
      const path = join(dir, 'snap');
      await writeFile(path, content);
      await s.write('k', path);
      expect(bodies).toHaveLength(2);
      expect(bodies.map(sha256)).toEqual([sha256(content), sha256(content)]);
    } finally {
      s.destroy();
      fake.closeAllConnections();
      await new Promise<void>((resolve) => fake.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('does not retry a permanent error', async () => {
    let requests = 0;
    const fake = createServer((req, res) => {
      requests++;
      req.resume();
      req.on('end', () => {
        res.writeHead(403, { 'content-type': 'application/xml' });
        res.end(
          '<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>',
        );
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const dir = await mkdtemp(join(tmpdir(), 's3-retry-'));
    const s = new S3Storage({
      bucket: 'b',
      endpoint: `http://127.0.0.1:${(fake.address() as AddressInfo).port}`,
      forcePathStyle: true,
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
    try {
      const path = join(dir, 'snap');
      await writeFile(path, 'x');
      await expect(s.write('k', path)).rejects.toThrow(
        /S3 upload of s3:\/\/b\/k failed: access denied to bucket "b"; check/,
      );
      expect(requests).toBe(1);
    } finally {
      s.destroy();
      fake.closeAllConnections();
      await new Promise<void>((resolve) => fake.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('s3Path', () => {
  it('splits at the first "/"; the key may contain more', () => {
    expect(s3Path('bucket/a/b/c')).toEqual({ bucket: 'bucket', key: 'a/b/c' });
  });

  it.each([
    ['bucket', /has no "\/"/],
    ['/key', /the bucket is empty/],
    ['bucket/', /the key is empty/],
    ['', /has no "\/"/],
  ])('rejects %j', (path, message) => {
    expect(() => s3Path(path)).toThrow(message);
  });
});

describe('parseAwsSecret', () => {
  it('reads the [default] profile, session token and region', () => {
    const parsed = parseAwsSecret({
      credentials: b64(
        '# comment\n[other]\naws_access_key_id = NO\n\n[default]\r\nAWS_ACCESS_KEY_ID=AKID\naws_secret_access_key = se=cret\naws_session_token = tok\n',
      ),
      config: b64('[profile default]\nregion = ap-south-1\n'),
    });
    expect(parsed).toEqual({
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'se=cret', sessionToken: 'tok' },
      region: 'ap-south-1',
    });
  });

  it('leaves region unset without config', () => {
    const parsed = parseAwsSecret({
      credentials: b64('[default]\naws_access_key_id=a\naws_secret_access_key=b\n'),
    });
    expect(parsed).toEqual({ credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
  });

  it('says which key or field is missing', () => {
    expect(() => parseAwsSecret({}, 'aws')).toThrow('Secret aws has no key "credentials"');
    expect(() => parseAwsSecret(undefined, 'aws')).toThrow('Secret aws has no key "credentials"');
    expect(() =>
      parseAwsSecret({ credentials: b64('[prod]\naws_access_key_id=a\n') }, 'aws'),
    ).toThrow(/has no \[default\] profile/);
    expect(() =>
      parseAwsSecret({ credentials: b64('[default]\naws_access_key_id=a\n') }, 'aws'),
    ).toThrow('Secret aws key "credentials" [default] profile lacks aws_secret_access_key');
    expect(() => parseAwsSecret({ credentials: b64('[default]\n') })).toThrow(
      /lacks aws_access_key_id and aws_secret_access_key/,
    );
  });
});
