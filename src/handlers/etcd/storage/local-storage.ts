import { randomBytes } from 'node:crypto';
import type { Dirent } from 'node:fs';
import {
  copyFile,
  mkdir,
  open,
  readFile,
  readdir,
  rename,
  rm,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join, posix, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { BackupNotFoundError, NotOwnerError } from './backup-storage.js';
import type { BackupStorage, OwnerOption, StoredBackup } from './backup-storage.js';

/** Marks a file still being written: `<name>.partial-<hex>`. */
const PARTIAL = '.partial-';
/** Beside each backup written with an owner: `<name>.konductor-owner`, holding the owner. */
const OWNER = '.konductor-owner';
/** A partial file this old was left by a crash (a copy to local disk never takes this long). */
const STALE_PARTIAL_MS = 60 * 60 * 1000;

/**
 * Backups as files under a root directory (e.g. a PVC mounted into the operator). Names are
 * `/`-separated paths relative to the root; a leading `/` is ignored (so `spec.local.path` may be
 * written absolute), and names that climb out of the root are rejected.
 */
export class LocalStorage implements BackupStorage {
  private readonly root: string;

  /** @param root the directory that holds every backup; created on the first write. */
  constructor(root: string) {
    this.root = resolve(root);
  }

  /**
   * Copies to a `.partial-` sibling, fsyncs it, then renames, so a crash never leaves a truncated
   * backup under `name`. With an `owner`, the name is claimed first (an owner file beside it) and an
   * existing file claimed by someone else, or by no one, is never replaced.
   */
  async write(name: string, localPath: string, options: OwnerOption = {}): Promise<void> {
    const target = this.pathOf(name);
    if (options.owner !== undefined) await this.claim(target, options.owner);
    const partial = `${target}${PARTIAL}${randomBytes(8).toString('hex')}`;
    try {
      await mkdir(dirname(target), { recursive: true });
      await copyFile(localPath, partial);
      const handle = await open(partial, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(partial, target);
    } catch (error) {
      await rm(partial, { force: true });
      throw new Error(`cannot store ${localPath} as ${target}: ${messageOf(error)}`, {
        cause: error,
      });
    }
    await syncDirectory(dirname(target));
  }

  /** Who wrote `name`, from its owner file; undefined when it has none. */
  async ownerOf(name: string): Promise<string | undefined> {
    return readOwner(this.pathOf(name));
  }

  /** Makes `owner` the owner of `target`, unless the file exists and belongs to someone else (or to no one). */
  private async claim(target: string, owner: string): Promise<void> {
    const current = await readOwner(target);
    if (current === owner) return;
    const exists = await stat(target).then(
      () => true,
      () => false,
    );
    if (exists || current !== undefined) {
      throw new NotOwnerError(
        `${target} already exists and was written by ${current ?? 'someone else'}, not ${owner}: it is left as it is. Choose another path, or delete the file`,
      );
    }
    await mkdir(dirname(target), { recursive: true });
    try {
      // `wx`: of two writers claiming the same new name at once, only one wins.
      await writeFile(`${target}${OWNER}`, owner, { flag: 'wx' });
    } catch (error) {
      if (codeOf(error) === 'EEXIST' && (await readOwner(target)) === owner) return;
      if (codeOf(error) === 'EEXIST')
        throw new NotOwnerError(
          `${target} was just claimed by ${(await readOwner(target)) ?? 'someone else'}, not ${owner}`,
        );
      throw error;
    }
  }

  /** Files (not directories) whose name starts with `prefix`, in every subdirectory, as S3 lists keys. */
  async list(prefix: string): Promise<StoredBackup[]> {
    const wanted = normalise(prefix, 'prefix');
    // Only the part up to the last `/` is a directory; the rest is a file-name prefix.
    const start = wanted.slice(0, wanted.lastIndexOf('/') + 1);
    const found: StoredBackup[] = [];
    await this.walk(start, wanted, found);
    return found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Opens the file now, so a missing backup fails here with {@link BackupNotFoundError} rather than later on the stream. */
  async read(name: string): Promise<Readable> {
    const path = this.pathOf(name);
    let handle;
    try {
      handle = await open(path, 'r');
    } catch (error) {
      if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR')
        throw new BackupNotFoundError(path, { cause: error });
      throw new Error(`cannot read backup ${path}: ${messageOf(error)}`, { cause: error });
    }
    if (!(await handle.stat()).isFile()) {
      await handle.close();
      throw new BackupNotFoundError(path);
    }
    // autoClose (the default) closes the handle when the stream ends or is destroyed.
    return handle.createReadStream();
  }

  /** Deletes a backup (and its owner file); with an `owner`, only a backup that owner wrote. */
  async delete(name: string, options: OwnerOption = {}): Promise<boolean> {
    const path = this.pathOf(name);
    if (options.owner !== undefined && (await readOwner(path)) !== options.owner) return false;
    try {
      await unlink(path);
    } catch (error) {
      if (codeOf(error) !== 'ENOENT' && codeOf(error) !== 'ENOTDIR')
        throw new Error(`cannot delete backup ${path}: ${messageOf(error)}`, { cause: error });
    }
    await rm(`${path}${OWNER}`, { force: true });
    return true;
  }

  /** The absolute file path; never throws, even for a name {@link write} would reject. */
  describe(name: string): string {
    return join(this.root, name.replace(/^\/+/, ''));
  }

  /** The absolute path of a valid backup name. */
  private pathOf(name: string): string {
    const rel = normalise(name, 'name');
    if (rel === '' || rel.endsWith('/'))
      throw new Error(`backup name ${JSON.stringify(name)} names a directory, not a file`);
    if (posix.basename(rel).includes(PARTIAL)) {
      throw new Error(
        `backup name ${JSON.stringify(name)} contains "${PARTIAL}", which marks unfinished writes`,
      );
    }
    if (rel.endsWith(OWNER))
      throw new Error(
        `backup name ${JSON.stringify(name)} ends in "${OWNER}", which marks owner files`,
      );
    return join(this.root, rel);
  }

  private async walk(dir: string, prefix: string, found: StoredBackup[]): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(join(this.root, dir), { withFileTypes: true });
    } catch (error) {
      if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return;
      throw new Error(`cannot list backups in ${join(this.root, dir)}: ${messageOf(error)}`, {
        cause: error,
      });
    }
    for (const entry of entries) {
      const name = dir + entry.name;
      if (entry.isDirectory()) {
        const sub = `${name}/`;
        if (sub.startsWith(prefix) || prefix.startsWith(sub)) await this.walk(sub, prefix, found);
      } else if (entry.isFile() && name.startsWith(prefix)) {
        const info = await stat(join(this.root, name)).catch(() => undefined);
        if (!info) continue; // deleted while listing
        if (entry.name.endsWith(OWNER)) continue;
        if (entry.name.includes(PARTIAL)) {
          if (Date.now() - info.mtimeMs > STALE_PARTIAL_MS)
            await rm(join(this.root, name), { force: true }).catch(() => {});
          continue;
        }
        found.push({ name, size: info.size, modified: info.mtime });
      }
    }
  }
}

/** `name` relative to the root, `/`-separated, without `.` segments; throws when it climbs out of the root. */
function normalise(name: string, what: 'name' | 'prefix'): string {
  if (name.includes('\0'))
    throw new Error(`backup ${what} ${JSON.stringify(name)} contains a NUL byte`);
  const stripped = name.replace(/^\/+/, '');
  if (stripped === '') return '';
  const rel = posix.normalize(stripped);
  if (rel === '..' || rel.startsWith('../')) {
    throw new Error(
      `backup ${what} ${JSON.stringify(name)} is outside the backup root (it climbs out with "..")`,
    );
  }
  return rel === '.' || rel === './' ? '' : rel;
}

/** The owner recorded beside `path`; undefined when there is none. */
async function readOwner(path: string): Promise<string | undefined> {
  try {
    return await readFile(`${path}${OWNER}`, 'utf8');
  } catch (error) {
    if (codeOf(error) === 'ENOENT' || codeOf(error) === 'ENOTDIR') return undefined;
    throw error;
  }
}

/** Makes a rename durable. Best effort: some filesystems cannot fsync a directory, and the data itself is already synced. */
async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // ignored, see above
  }
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
