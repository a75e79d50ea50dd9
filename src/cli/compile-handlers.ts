// TypeScript handler files, compiled once when the operator starts instead of loaded through tsx: tsx's
// ESM hooks run on a thread of their own, a second V8 heap that stays for the life of the process
// (about 28 MB, half of an idle operator). esbuild (which tsx uses too) bundles the files with their
// TypeScript imports into a temporary folder; packages and JavaScript files stay imports of the files
// they resolve to, so the handlers share konductor's modules with the CLI. Files that need tsx's
// CommonJS semantics (a .cts, or a .ts outside a "type": "module" package), or a folder that cannot be
// written, fall back to tsx.
import { readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Plugin } from 'esbuild';
import { makeHandlerFolder, sweepHandlerFolders } from './handler-folders.js';

/** A failure in the handler files themselves (a syntax or type-stripping error): one line, naming the file. */
export class CompileError extends Error {
  override readonly name = 'CompileError';
}

/** Where each TypeScript file's compiled module is (file URLs), by source path. */
export type CompiledModules = ReadonlyMap<string, string>;

/**
 * Compiles `files` (absolute TypeScript paths) into ES modules in a temporary folder, removed when the
 * process exits. Undefined when they must go through tsx instead: CommonJS files, a JavaScript file of
 * the project among their imports, imports resolved at run time, two files that differ only in
 * `.ts`/`.mts`, or nowhere to write.
 * @throws {@link CompileError} when esbuild reports an error in the files.
 */
export async function compileHandlers(
  files: readonly string[],
  folder: () => string = () => {
    sweepHandlerFolders(); // left by operators killed outright
    return makeHandlerFolder();
  },
): Promise<CompiledModules | undefined> {
  if (files.length === 0 || files.some((file) => !isEsm(file))) return undefined;
  // a.ts and a.mts would both compile to a.mjs; tsx loads each where it is.
  const stems = new Set(files.map((file) => file.replace(/\.m?ts$/, '')));
  if (stems.size < files.length) return undefined;
  let outdir: string;
  try {
    outdir = folder();
  } catch {
    return undefined;
  }
  const remove = (): void => rmSync(outdir, { recursive: true, force: true });
  process.once('exit', remove);
  // Set by the plugins when a file needs what only a loader gives (see `needsLoader`).
  const verdict: { needsLoader?: string } = {};
  const { build, stop } = await import('esbuild');
  const result = await build({
    entryPoints: [...files],
    outdir,
    outbase: commonDir(files),
    bundle: true,
    splitting: true, // a module two handler files import stays one module, with one copy of its classes
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    outExtension: { '.js': '.mjs' },
    sourcemap: 'inline',
    mainFields: ['main'], // as node resolves packages (esbuild resolves them only to name the file)
    conditions: ['node', 'import'],
    logLevel: 'silent',
    metafile: true,
    plugins: [onlySourcesBundled(verdict), sourceLocation(verdict)],
  })
    .catch((error: unknown): never => {
      const first = (
        error as { errors?: Array<{ text: string; location?: { file: string; line: number } }> }
      ).errors?.[0];
      if (!first) throw error;
      const where = first.location ? `${first.location.file}:${first.location.line}: ` : '';
      throw new CompileError(`${where}${first.text}`);
    })
    .finally(stop); // esbuild's service is a process of its own: ~10 MB kept for nothing
  if (verdict.needsLoader !== undefined) {
    remove();
    return undefined;
  }
  // Stack traces point into the sources, as under tsx.
  process.setSourceMapsEnabled(true);
  const modules = new Map<string, string>();
  for (const [out, output] of Object.entries(result.metafile.outputs)) {
    if (output.entryPoint === undefined) continue;
    modules.set(resolve(output.entryPoint), pathToFileURL(resolve(out)).href);
  }
  return files.every((file) => modules.has(file)) ? modules : undefined;
}

/** Whether node would run this file as an ES module: `.mts`, or `.ts` in a `"type": "module"` package. */
export function isEsm(file: string): boolean {
  if (file.endsWith('.mts')) return true;
  if (!file.endsWith('.ts')) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: unknown };
      return pkg.type === 'module';
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return false;
    }
    if (dirname(dir) === dir) return false;
  }
}

/** The deepest folder holding every file. */
function commonDir(files: readonly string[]): string {
  let dir = dirname(files[0]!);
  while (!files.every((file) => relative(dir, file).split(/[\\/]/)[0] !== '..')) dir = dirname(dir);
  return dir;
}

const RESOLVING = Symbol('resolving');

/**
 * What only a loader (tsx) gives a module at its own place: `require`, CommonJS TypeScript, and
 * imports resolved at run time (`import(variable)`, `import.meta.resolve`), which would resolve from
 * the temporary folder. A file that uses one of them sends every file to tsx.
 */
const NEEDS_LOADER = /\bimport\s*\(\s*[^'"`\s)]|\bimport\.meta\.resolve\b|\brequire\s*\(/;

/**
 * Only the project's TypeScript and JSON are bundled. Everything else they import stays an import, of
 * the file it resolves to from the importing source: packages, because the compiled modules sit in a
 * temporary folder from where node would not find the project's; JavaScript files, because the handler
 * files that name them are also imported as they are, and one module must not load twice. A
 * JavaScript file of the project is left to tsx, with everything: it may import TypeScript.
 */
function onlySourcesBundled(verdict: { needsLoader?: string }): Plugin {
  return {
    name: 'only-sources-bundled',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === 'entry-point' || args.pluginData === RESOLVING) return undefined;
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: RESOLVING,
        });
        // Not found: node decides at run time (an optional package inside a try, say).
        if (resolved.errors.length > 0) return { path: args.path, external: true };
        if (resolved.external) return { path: args.path, external: true }; // node's own modules
        const inProject = !/[\\/]node_modules[\\/]/.test(resolved.path);
        if (inProject && /\.(ts|mts|json)$/.test(resolved.path)) return { path: resolved.path };
        // A package linked into node_modules (npm link, a workspace) resolves to its real folder,
        // outside node_modules: named by its package name, it is still a package, not the project's.
        if (inProject && isRelative(args.path)) verdict.needsLoader ??= resolved.path; // .cts, .js, .mjs, .cjs
        return { path: pathToFileURL(resolved.path).href, external: true };
      });
    },
  };
}

/** Whether an import names a file (`./x`, `../x`, `/x`, `file:`) rather than a package. */
function isRelative(specifier: string): boolean {
  return /^(\.{1,2}([\\/]|$)|[\\/]|file:)/.test(specifier) || isAbsolute(specifier);
}

/**
 * `import.meta.url`, `.filename` and `.dirname` keep naming the source file, not the compiled one; a
 * file that needs a loader (`NEEDS_LOADER`) is noted.
 */
function sourceLocation(verdict: { needsLoader?: string }): Plugin {
  return {
    name: 'source-location',
    setup(build) {
      build.onLoad({ filter: /\.m?ts$/ }, async (args) => {
        const text = await readFile(args.path, 'utf8');
        if (NEEDS_LOADER.test(text)) verdict.needsLoader ??= args.path;
        const values: Record<string, string> = {
          url: pathToFileURL(args.path).href,
          filename: args.path,
          dirname: dirname(args.path),
        };
        const contents = text.replace(
          /\bimport\.meta\.(url|filename|dirname)\b/g,
          (_, key: string) => JSON.stringify(values[key]),
        );
        return { contents, loader: 'ts' };
      });
    },
  };
}
