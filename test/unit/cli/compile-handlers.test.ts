import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CompileError, compileHandlers, isEsm } from '../../../src/cli/compile-handlers.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

describe('TypeScript handler files compiled once', () => {
  let project: string;
  const outdirs: string[] = [];
  const folder = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'konductor-compiled-'));
    outdirs.push(dir);
    return dir;
  };

  function write(path: string, text: string): string {
    const file = join(project, path);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, text);
    return file;
  }

  beforeEach(() => {
    project = mkdtempSync(join(tmpdir(), 'konductor-project-'));
    write('package.json', JSON.stringify({ type: 'module' }));
    symlinkSync(join(root, 'node_modules'), join(project, 'node_modules'), 'dir');
  });
  afterEach(() => {
    for (const dir of [project, ...outdirs.splice(0)])
      rmSync(dir, { recursive: true, force: true });
  });

  test('a handler file and the TypeScript it imports become one module per file, outside the project', async () => {
    write('lib/double.ts', 'export const double = (n: number): number => n * 2;\n');
    const a = write(
      'handlers/a.ts',
      "import { double } from '../lib/double.js';\nexport const a: number = double(2);\n",
    );
    const compiled = await compileHandlers([a], folder);
    const url = compiled?.get(a);
    expect(url).toMatch(/^file:.*konductor-compiled-[^/]+\/a\.mjs$/);
    expect(((await import(url!)) as { a: number }).a).toBe(4);
  });

  test('two handler files importing one TypeScript module share it', async () => {
    write('shared.ts', 'export class Shared {}\n');
    const a = write('a.ts', "export { Shared } from './shared.js';\n");
    const b = write('b.ts', "export { Shared } from './shared.js';\n");
    const compiled = (await compileHandlers([a, b], folder))!;
    const [fromA, fromB] = (await Promise.all(
      [a, b].map((f) => import(compiled.get(f)!)),
    )) as Array<{
      Shared: unknown;
    }>;
    expect(fromA!.Shared).toBe(fromB!.Shared);
  });

  test('packages stay imports of their files: one module, shared with the project', async () => {
    const a = write('a.ts', "export { Duration } from 'luxon';\n");
    const compiled = (await compileHandlers([a], folder))!;
    const module = (await import(compiled.get(a)!)) as { Duration: unknown };
    expect(module.Duration).toBe((await import('luxon')).Duration);
  });

  test('a package linked into node_modules from outside it (npm link, a workspace) stays a package import', async () => {
    const linked = write('../linked-greeting/index.js', "export const greeting = 'hello';\n");
    write('../linked-greeting/package.json', JSON.stringify({ name: 'greeting', type: 'module' }));
    rmSync(join(project, 'node_modules'));
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(join(linked, '..'), join(project, 'node_modules', 'greeting'), 'dir');
    const a = write('a.ts', "export { greeting } from 'greeting';\n");
    const compiled = (await compileHandlers([a], folder))!;
    expect(compiled).toBeDefined();
    const module = (await import(compiled.get(a)!)) as { greeting: string };
    expect(module.greeting).toBe('hello');
    rmSync(join(linked, '..'), { recursive: true, force: true });
  });

  test('JSON of the project is bundled, with or without an import attribute', async () => {
    write('settings.json', '{"replicas":3}');
    const a = write(
      'a.ts',
      "import settings from './settings.json';\nexport const n = settings.replicas;\n",
    );
    const module = (await import((await compileHandlers([a], folder))!.get(a)!)) as { n: number };
    expect(module.n).toBe(3);
  });

  test('a package that is not installed is left for node to find at run time (an optional import)', async () => {
    const a = write(
      'a.ts',
      "export async function load() { try { return await import('not-installed-anywhere'); } catch { return undefined; } }\n",
    );
    expect((await compileHandlers([a], folder))?.get(a)).toMatch(/\.mjs$/);
  });

  test.each([
    ['a JavaScript file of the project', "export { marker } from './plain.mjs';\n"],
    ['an import of a computed path', 'export const load = (name: string) => import(name);\n'],
    ['import.meta.resolve', "export const where = import.meta.resolve('./x.js');\n"],
    ['require', "export const fs = require('node:fs');\n"],
  ])('a file with %s goes to tsx, with every other', async (_, text) => {
    write('plain.mjs', 'export const marker = {};\n');
    const a = write('a.ts', text);
    const b = write('b.ts', 'export const b = 1;\n');
    expect(await compileHandlers([a, b], folder)).toBeUndefined();
  });

  test('two files that differ only in .ts and .mts are left to tsx: they would compile to one file', async () => {
    const a = write('a.ts', 'export const a = 1;\n');
    const b = write('a.mts', 'export const b = 2;\n');
    expect(await compileHandlers([a, b], folder)).toBeUndefined();
  });

  test('import.meta.url and import.meta.dirname still name the source file', async () => {
    const a = write(
      'a.ts',
      'export const url = import.meta.url;\nexport const dir = import.meta.dirname;\n',
    );
    const module = (await import((await compileHandlers([a], folder))!.get(a)!)) as {
      url: string;
      dir: string;
    };
    expect({ url: module.url, dir: module.dir }).toEqual({
      url: pathToFileURL(a).href,
      dir: project,
    });
  });

  test('an error in a file is one line naming it and its line', async () => {
    const a = write('a.ts', 'export const x = ;\n');
    const failure = compileHandlers([a], folder);
    await expect(failure).rejects.toThrow(CompileError);
    await expect(failure).rejects.toThrow(/a\.ts:1: Unexpected ";"/);
  });

  test('CommonJS TypeScript (outside a "type": "module" package) is left to tsx', async () => {
    write('package.json', '{}');
    const a = write('a.ts', 'export const a = 1;\n');
    expect(await compileHandlers([a], folder)).toBeUndefined();
  });

  test('with nowhere to write, the files are left to tsx', async () => {
    const a = write('a.ts', 'export const a = 1;\n');
    const nowhere = (): string => {
      throw Object.assign(new Error('read-only file system'), { code: 'EROFS' });
    };
    expect(await compileHandlers([a], nowhere)).toBeUndefined();
  });

  test.each([
    ['x.mts', {}, true],
    ['x.cts', { type: 'module' }, false],
    ['x.ts', { type: 'module' }, true],
    ['x.ts', { type: 'commonjs' }, false],
  ])('%s in a package %j is an ES module: %s', (name, pkg, esm) => {
    write('package.json', JSON.stringify(pkg));
    expect(isEsm(join(project, name))).toBe(esm);
  });
});
