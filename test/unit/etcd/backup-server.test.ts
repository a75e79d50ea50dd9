import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { silentLogger } from '../../../src/framework/index.js';
import {
  BackupServer,
  downloadURL,
  type RestoreDownload,
} from '../../../src/handlers/etcd/backup-server.js';
import {
  fingerprintSnapshot,
  CorruptSnapshotError,
} from '../../../src/handlers/etcd/snapshot-trailer.js';

/** Bytes shaped like an etcd snapshot: a body and its SHA-256 as a 32-byte trailer. */
function snapshot(body: string): Buffer {
  const data = Buffer.from(body);
  return Buffer.concat([data, createHash('sha256').update(data).digest()]);
}

const TOKEN = 'f'.repeat(64);

describe('the backup server serves one restore, once, to its own seed', () => {
  let server: BackupServer;
  let base: string;
  let state: { pendingSeed: string | undefined; file: Buffer; exists: boolean };
  const opened: string[] = [];
  /** What the server asked for: restore lookups (a GET) and seed lookups (a Pod LIST). */
  const asked: string[] = [];

  beforeEach(async () => {
    const file = snapshot('etcd data');
    state = { pendingSeed: 'seed-uid-1', file, exists: true };
    opened.length = 0;
    asked.length = 0;
    server = new BackupServer(
      async (namespace, restore): Promise<RestoreDownload | undefined> => {
        asked.push(`restore ${namespace}/${restore}`);
        if (!state.exists || namespace !== 'team-a' || restore !== 'db') return undefined;
        return {
          token: TOKEN,
          pendingSeed: async () => {
            asked.push('seed');
            return state.pendingSeed;
          },
          expected: await fingerprintSnapshot(Readable.from([file])),
          open: async () => {
            opened.push(restore);
            return { stream: Readable.from([state.file]), close: () => undefined };
          },
        };
      },
      silentLogger(),
      { host: '127.0.0.1', port: 0 },
    );
    base = await server.start();
  });

  afterEach(async () => {
    await server.stop();
  });

  it('without the token: 403, and storage is not touched', async () => {
    expect((await fetch(`${base}/v1/backup/team-a/db`)).status).toBe(403);
    expect((await fetch(`${base}/v1/backup/team-a/db?token=${'0'.repeat(64)}`)).status).toBe(403);
    expect(opened).toEqual([]);
  });

  it.each([
    ['no token', ''],
    ['an empty token', '?token='],
    ['a short token', `?token=${'f'.repeat(63)}`],
    ['a token that is not lower-case hex', `?token=${'F'.repeat(64)}`],
    ['a long token', `?token=${'f'.repeat(10_000)}`],
  ])('%s: 403 before any lookup', async (_what, query) => {
    expect((await fetch(`${base}/v1/backup/team-a/db${query}`)).status).toBe(403);
    expect(asked).toEqual([]);
  });

  it('a wrong token is refused after reading the restore only, before looking for its seed Pod', async () => {
    expect((await fetch(downloadURL(base, 'team-a', 'db', '0'.repeat(64)))).status).toBe(403);
    expect(asked).toEqual(['restore team-a/db']);
  });

  it('an unknown restore gets exactly the answer of a wrong token', async () => {
    const unknown = await fetch(downloadURL(base, 'team-a', 'other', TOKEN));
    const wrong = await fetch(downloadURL(base, 'team-a', 'db', '0'.repeat(64)));
    expect(unknown.status).toBe(403);
    expect(wrong.status).toBe(403);
    expect((await unknown.text()).replace('other', 'db')).toBe(await wrong.text());
  });

  it('more than 10 requests a second from one address: 429', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 40 }, () => fetch(`${base}/v1/backup/team-a/db`).then((r) => r.status)),
    );
    expect(statuses).toContain(429);
  });

  it('with the token, while the seed is pending: the backup, byte for byte; a second download: 404', async () => {
    const first = await fetch(downloadURL(base, 'team-a', 'db', TOKEN));
    expect(first.status).toBe(200);
    expect(Buffer.from(await first.arrayBuffer()).equals(state.file)).toBe(true);
    expect((await fetch(downloadURL(base, 'team-a', 'db', TOKEN))).status).toBe(404);
  });

  it('after the restore (no seed pending): 404 even with the token', async () => {
    state.pendingSeed = undefined;
    expect((await fetch(downloadURL(base, 'team-a', 'db', TOKEN))).status).toBe(404);
  });

  it('a file that changed since the restore checked it is cut short before its end, never served whole', async () => {
    state.file = snapshot('other data!');
    const response = await fetch(downloadURL(base, 'team-a', 'db', TOKEN));
    await expect(response.arrayBuffer()).rejects.toThrow();
  });
});

describe('a snapshot is checked by its SHA-256 trailer', () => {
  it('gives the size and digest of a complete snapshot', async () => {
    const file = snapshot('abc');
    await expect(
      fingerprintSnapshot(Readable.from([file.subarray(0, 10), file.subarray(10)])),
    ).resolves.toEqual({
      size: file.length,
      sha256: file.subarray(-32).toString('hex'),
    });
  });

  it('refuses a cut or corrupt one', async () => {
    const file = snapshot('abc');
    await expect(
      fingerprintSnapshot(Readable.from([file.subarray(0, file.length - 1)])),
    ).rejects.toBeInstanceOf(CorruptSnapshotError);
    await expect(
      fingerprintSnapshot(Readable.from([Buffer.from('not a snapshot at all, just some text')])),
    ).rejects.toBeInstanceOf(CorruptSnapshotError);
  });
});
