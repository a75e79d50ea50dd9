import { mkdtemp, mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { BackupNotFoundError } from '../../../src/handlers/etcd/storage/backup-storage.js';
import { LocalStorage } from '../../../src/handlers/etcd/storage/local-storage.js';

async function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

describe('LocalStorage', () => {
  let dir: string;
  let root: string;
  let storage: LocalStorage;

  /** A source file outside the root, as the snapshot step would leave it. */
  async function source(content: string): Promise<string> {
    const path = join(dir, `src-${Math.random().toString(16).slice(2)}`);
    await writeFile(path, content);
    return path;
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'local-storage-'));
    root = join(dir, 'root');
    storage = new LocalStorage(root);
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes, lists, reads and deletes, creating directories as needed', async () => {
    await storage.write('backups/c1_v1_2024-01-01-00:00:00', await source('one'));
    const [listed, ...rest] = await storage.list('backups/c1');
    expect(rest).toEqual([]);
    expect(listed).toMatchObject({ name: 'backups/c1_v1_2024-01-01-00:00:00', size: 3 });
    // fs Dates come from Node's realm, not the test's, so expect.any(Date) would not match.
    expect(Math.abs(listed!.modified.getTime() - Date.now())).toBeLessThan(60_000);
    expect(await text(await storage.read('backups/c1_v1_2024-01-01-00:00:00'))).toBe('one');
    // Nothing else is left next to it.
    expect(await readdir(join(root, 'backups'))).toEqual(['c1_v1_2024-01-01-00:00:00']);

    await storage.delete('backups/c1_v1_2024-01-01-00:00:00');
    expect(await storage.list('backups/c1')).toEqual([]);
  });

  it('overwrites an existing object (the one-shot backup is rewritten each time)', async () => {
    await storage.write('c1', await source('old'));
    await storage.write('c1', await source('new'));
    expect(await text(await storage.read('c1'))).toBe('new');
    expect(await readdir(root)).toEqual(['c1']);
  });

  it('lists by string prefix across subdirectories, as S3 does, sorted by name', async () => {
    for (const name of ['a/c1_v2_x', 'a/c1_v1_x', 'a/c10/deep', 'a/c2_v1_x', 'b/c1_v1_x', 'top']) {
      await storage.write(name, await source(name));
    }
    expect((await storage.list('a/c1')).map((b) => b.name)).toEqual([
      'a/c10/deep',
      'a/c1_v1_x',
      'a/c1_v2_x',
    ]);
    expect((await storage.list('a/c1_')).map((b) => b.name)).toEqual(['a/c1_v1_x', 'a/c1_v2_x']);
    expect((await storage.list('a/')).map((b) => b.name)).toEqual([
      'a/c10/deep',
      'a/c1_v1_x',
      'a/c1_v2_x',
      'a/c2_v1_x',
    ]);
    expect((await storage.list('')).map((b) => b.name)).toEqual([
      'a/c10/deep',
      'a/c1_v1_x',
      'a/c1_v2_x',
      'a/c2_v1_x',
      'b/c1_v1_x',
      'top',
    ]);
    expect(await storage.list('missing/dir/x')).toEqual([]);
  });

  it('takes a leading "/" as relative to the root, like spec.local.path', async () => {
    await storage.write('/abs/c1', await source('x'));
    expect(storage.describe('/abs/c1')).toBe(join(root, 'abs/c1'));
    expect((await storage.list('/abs/')).map((b) => b.name)).toEqual(['abs/c1']);
    expect(await text(await storage.read('abs/c1'))).toBe('x');
  });

  it('rejects names that climb out of the root, with a clear error', async () => {
    const file = await source('x');
    await expect(storage.write('../escape', file)).rejects.toThrow(/outside the backup root/);
    await expect(storage.write('a/../../escape', file)).rejects.toThrow(/outside the backup root/);
    await expect(storage.read('../../etc/passwd')).rejects.toThrow(/outside the backup root/);
    await expect(storage.delete('..')).rejects.toThrow(/outside the backup root/);
    await expect(storage.list('../')).rejects.toThrow(/outside the backup root/);
    await expect(stat(join(dir, 'escape'))).rejects.toThrow(/ENOENT/);
    // Inside the root after normalisation is fine.
    await storage.write('a/../inside', file);
    expect((await storage.list('')).map((b) => b.name)).toEqual(['inside']);
  });

  it('rejects names that are directories or look like unfinished writes', async () => {
    const file = await source('x');
    await expect(storage.write('', file)).rejects.toThrow(/names a directory/);
    await expect(storage.write('dir/', file)).rejects.toThrow(/names a directory/);
    await expect(storage.write('c1.partial-0123', file)).rejects.toThrow(/unfinished writes/);
  });

  it('does not list a leftover .partial- file, and removes it once it is over an hour old', async () => {
    await storage.write('c1_v1_x', await source('done'));
    const fresh = join(root, 'c1_v2_x.partial-aaaa');
    const stale = join(root, 'c1_v3_x.partial-bbbb');
    await writeFile(fresh, 'half');
    await writeFile(stale, 'half');
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(stale, twoHoursAgo, twoHoursAgo);

    expect((await storage.list('c1')).map((b) => b.name)).toEqual(['c1_v1_x']);
    // A fresh one may belong to a write in progress (another process), so it stays.
    expect((await readdir(root)).sort()).toEqual(['c1_v1_x', 'c1_v2_x.partial-aaaa']);
  });

  it('read of a missing object throws BackupNotFoundError naming the path', async () => {
    const error = await storage.read('nope/c1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackupNotFoundError);
    expect((error as Error).message).toBe(`backup ${join(root, 'nope/c1')} does not exist`);
    await mkdir(join(root, 'adir'), { recursive: true });
    await expect(storage.read('adir')).rejects.toBeInstanceOf(BackupNotFoundError);
  });

  it('delete of a missing object is fine', async () => {
    await expect(storage.delete('never/written')).resolves.toBe(true);
  });

  describe('with owners (each EtcdBackup only replaces and prunes what it wrote)', () => {
    it('a writer replaces its own file', async () => {
      await storage.write('one.db', await source('first'), { owner: 'EtcdBackup a' });
      await storage.write('one.db', await source('second'), { owner: 'EtcdBackup a' });
      expect(await readFile(join(root, 'one.db'), 'utf8')).toBe('second');
      expect(await storage.ownerOf('one.db')).toBe('EtcdBackup a');
    });

    it('another writer cannot overwrite it, and the file stays as it was', async () => {
      await storage.write('one.db', await source('first'), { owner: 'EtcdBackup a' });
      await expect(
        storage.write('one.db', await source('evil'), { owner: 'EtcdBackup b' }),
      ).rejects.toThrow(/already exists and was written by EtcdBackup a, not EtcdBackup b/);
      expect(await readFile(join(root, 'one.db'), 'utf8')).toBe('first');
    });

    it('a file nobody claimed (put there by hand) is never overwritten', async () => {
      await mkdir(root, { recursive: true });
      await writeFile(join(root, 'hand.db'), 'mine');
      await expect(
        storage.write('hand.db', await source('evil'), { owner: 'EtcdBackup a' }),
      ).rejects.toThrow(/already exists/);
      expect(await readFile(join(root, 'hand.db'), 'utf8')).toBe('mine');
    });

    it("delete with an owner leaves another owner's file alone", async () => {
      await storage.write('p_v1_2024-01-01-00:00:00', await source('a'), { owner: 'EtcdBackup a' });
      await expect(
        storage.delete('p_v1_2024-01-01-00:00:00', { owner: 'EtcdBackup b' }),
      ).resolves.toBe(false);
      expect(await readFile(join(root, 'p_v1_2024-01-01-00:00:00'), 'utf8')).toBe('a');
      await expect(
        storage.delete('p_v1_2024-01-01-00:00:00', { owner: 'EtcdBackup a' }),
      ).resolves.toBe(true);
      expect(await readdir(root)).toEqual([]);
    });

    it('owner files are not listed, and cannot be named as backups', async () => {
      await storage.write('p_v1_2024-01-01-00:00:00', await source('a'), { owner: 'EtcdBackup a' });
      expect((await storage.list('p_v')).map((b) => b.name)).toEqual(['p_v1_2024-01-01-00:00:00']);
      await expect(storage.read('p_v1_2024-01-01-00:00:00.konductor-owner')).rejects.toThrow(
        /owner files/,
      );
    });
  });

  it('a failed write names the source and leaves nothing behind', async () => {
    await expect(storage.write('c1', join(dir, 'no-such-file'))).rejects.toThrow(
      /cannot store .*no-such-file as .*c1/,
    );
    expect(await readdir(root)).toEqual([]);
  });

  it('stores the content byte for byte', async () => {
    const content = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    const path = join(dir, 'bin');
    await writeFile(path, content);
    await storage.write('bin', path);
    expect((await readFile(join(root, 'bin'))).equals(content)).toBe(true);
    expect((await storage.list('bin'))[0]?.size).toBe(content.length);
  });
});
