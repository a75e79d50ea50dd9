import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { makeHandlerFolder, sweepHandlerFolders } from '../../../src/cli/handler-folders.js';

describe('the folders compiled handler files live in', () => {
  let parent: string;
  beforeEach(() => {
    parent = mkdtempSync(join(tmpdir(), 'konductor-folders-'));
  });
  afterEach(() => rmSync(parent, { recursive: true, force: true }));

  const folder = (name: string): string => {
    const path = join(parent, name);
    mkdirSync(join(path, 'nested'), { recursive: true });
    return path;
  };

  test('a new folder names the process that made it', () => {
    expect(basename(makeHandlerFolder(parent))).toMatch(
      new RegExp(`^konductor-handlers-${process.pid}-[A-Za-z0-9]+$`),
    );
  });

  test('a folder whose process is gone is removed, with what it holds', () => {
    const stale = folder('konductor-handlers-4000001-abc123');

    expect(sweepHandlerFolders(parent, () => false)).toBe(1);
    expect(existsSync(stale)).toBe(false);
  });

  test('a folder whose process still runs is kept', () => {
    const live = folder('konductor-handlers-4000002-abc123');

    expect(sweepHandlerFolders(parent, () => true)).toBe(0);
    expect(existsSync(live)).toBe(true);
  });

  test("this process's own folder is kept, whatever the check says", () => {
    const own = makeHandlerFolder(parent);

    expect(sweepHandlerFolders(parent, () => false)).toBe(0);
    expect(existsSync(own)).toBe(true);
  });

  test('names that are not ours and links are left alone', () => {
    const other = folder('konductor-handlers-old');
    const target = folder('kept');
    symlinkSync(target, join(parent, 'konductor-handlers-4000003-link12'));

    expect(sweepHandlerFolders(parent, () => false)).toBe(0);
    expect(existsSync(other)).toBe(true);
    expect(existsSync(join(target, 'nested'))).toBe(true);
  });

  test('a parent that cannot be read removes nothing and does not throw', () => {
    expect(sweepHandlerFolders(join(parent, 'missing'))).toBe(0);
  });
});
