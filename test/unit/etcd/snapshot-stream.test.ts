import { jest } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { writeSnapshot } from '../../../src/handlers/etcd/snapshot.js';

/** A snapshot stream as etcd sends it: `{ blob }` messages whose bytes end in the SHA-256 of the rest. */
function snapshotMessages(chunks: number, chunkBytes: number): { source: Readable; bytes: Buffer } {
  const body = Buffer.alloc(chunks * chunkBytes, 7);
  const bytes = Buffer.concat([body, createHash('sha256').update(body).digest()]);
  const blobs: { blob: Buffer }[] = [];
  for (let at = 0; at < bytes.length; at += chunkBytes)
    blobs.push({ blob: bytes.subarray(at, at + chunkBytes) });
  return { source: Readable.from(blobs, { objectMode: true }), bytes };
}

describe('a snapshot download is written with back-pressure and a size limit', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'konductor-snapshot-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('pauses the source while the file catches up, and writes the snapshot whole', async () => {
    const { source, bytes } = snapshotMessages(32, 1024 * 1024);
    const pause = jest.spyOn(source, 'pause');
    const file = join(dir, 'snapshot.db');
    await expect(
      writeSnapshot(source, file, { what: 'snapshot from test', maxBytes: 1024 ** 3 }),
    ).resolves.toBe(bytes.length);
    expect(pause).toHaveBeenCalled();
    expect((await readFile(file)).equals(bytes)).toBe(true);
  });

  it('stops a snapshot larger than the size limit, naming the limit', async () => {
    const { source } = snapshotMessages(8, 1024);
    await expect(
      writeSnapshot(source, join(dir, 'big.db'), { what: 'snapshot from test', maxBytes: 4096 }),
    ).rejects.toThrow(
      /snapshot from test failed: more than 4096 bytes, the snapshot size limit \(KONDUCTOR_MAX_SNAPSHOT_BYTES\)/,
    );
    expect(source.destroyed).toBe(true);
  });
});
