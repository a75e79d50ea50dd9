// The suite's S3 stand-in (s3rver) inside the node's network namespace (NodeCluster.runInNode), on
// the node's bridge address, where Pods reach it and nothing outside this machine can. Runs until a
// stop file appears, then prints the keys in its bucket as one JSON object on stdout.
// s3rver 3.7 needs `--openssl-legacy-provider` (DES continuation tokens, see test/support/s3-server.ts).
//
//   node --openssl-legacy-provider s3-in-node.mjs <address> <port> <bucket> <stop file>
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

const [address, port, bucket, stopFile] = process.argv.slice(2);
if (!address || !port || !bucket || !stopFile) {
  process.stderr.write('usage: s3-in-node.mjs <address> <port> <bucket> <stop file>\n');
  process.exit(2);
}
const directory = mkdtempSync(join(tmpdir(), 's3rver-node-'));
const server = new S3rver({
  address,
  port: Number(port),
  silent: true,
  directory,
  configureBuckets: [{ name: bucket }],
});
try {
  await server.run();
  while (!existsSync(stopFile)) await sleep(200);
  const client = new S3Client({
    endpoint: `http://${address}:${port}`,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
  client.destroy();
  process.stdout.write(
    `${JSON.stringify({ keys: (listed.Contents ?? []).map((o) => o.Key).sort() })}\n`,
  );
} finally {
  await server.close().catch(() => undefined);
  rmSync(directory, { recursive: true, force: true });
}
