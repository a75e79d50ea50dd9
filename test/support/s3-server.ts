import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** The static credentials s3rver's built-in account accepts. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

/** A running s3rver; use it with `forcePathStyle: true` (its vhost mode expects `*.amazonaws.com` host names). */
export interface TestS3Server {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  credentials: typeof S3RVER_CREDENTIALS;
  /** Stops the server and deletes its data. */
  stop(): Promise<void>;
}

// Runs in the child: starts s3rver, prints its port, and exits when stdin closes, which also
// happens when the test process dies, so no server outlives its test.
const CHILD = `
const S3rver = require(process.argv[1]);
new S3rver(JSON.parse(process.argv[2])).run().then(
  (address) => process.stdout.write(JSON.stringify({ port: address.port }) + '\\n'),
  (error) => { console.error(error); process.exit(1); },
);
process.stdin.on('end', () => process.exit(0)).resume();
`;

/**
 * Starts s3rver on a free loopback port with a fresh temp directory, with `buckets` already created.
 *
 * It runs in a child process started with `--openssl-legacy-provider`: s3rver 3.7 encrypts
 * ListObjectsV2 continuation tokens with DES, which OpenSSL 3 (Node >= 17) refuses by default, so
 * any truncated listing (pagination) fails with a 500 in-process.
 */
export async function startS3Server(
  buckets: readonly string[] = [],
  timeoutMs = 15_000,
): Promise<TestS3Server> {
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'));
  const options = {
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  };
  const s3rver = createRequire(import.meta.url).resolve('s3rver');
  const child = spawn(
    process.execPath,
    ['--openssl-legacy-provider', '-e', CHILD, s3rver, JSON.stringify(options)],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`s3rver did not start within ${timeoutMs} ms:\n${stderr}`)),
      timeoutMs,
    );
    createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve((JSON.parse(line) as { port: number }).port);
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`s3rver exited with ${code} during start-up:\n${stderr}`));
    });
  }).catch(async (error: unknown) => {
    child.kill('SIGKILL');
    await rm(directory, { recursive: true, force: true });
    throw error;
  });

  return {
    endpoint: `http://127.0.0.1:${port}`,
    credentials: S3RVER_CREDENTIALS,
    async stop() {
      child.stdin.end();
      const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(kill);
      await rm(directory, { recursive: true, force: true });
    },
  };
}
