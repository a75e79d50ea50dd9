import { readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { HANDLERS, METADATA } from '../framework/registry/metadata.js';
import { CACHES, INDEXES } from '../framework/registry/cache-declarations.js';
import { Registry, type HandlerClass } from '../framework/registry/registry.js';
import { activityDeclarationsOf } from '../framework/registry/activity-declarations.js';
import { ADMISSIONS, CONVERSIONS } from '../framework/registry/admission-declarations.js';

/** A handler path that is missing, fails to import, or holds no handlers; the message is one line. */
export class LoadError extends Error {
  override readonly name = 'LoadError';
}

const MODULE_FILE = /\.(m?ts|m?js)$/;
const TYPESCRIPT_FILE = /\.[mc]?ts$/;

/** What {@link loadHandlers} calls along the way. */
export interface LoadHooks {
  /**
   * Compiles the TypeScript files (absolute paths) before any file is imported: where each compiled
   * module is, or undefined to import them through {@link LoadHooks.beforeTypeScript}'s loader.
   */
  compileTypeScript?: (files: string[]) => Promise<ReadonlyMap<string, string> | undefined>;
  /** Called once, before any file is imported, when TypeScript files are imported as they are: registers a loader for them. */
  beforeTypeScript?: () => Promise<void>;
}

const SKIPPED_FILE = /\.d\.m?ts$|\.test\./;

/**
 * Imports handler files and registers every exported class that carries handler decorators.
 * Folders are searched recursively for `*.ts`, `*.mts`, `*.js` and `*.mjs` files, leaving out
 * `*.d.ts`, `*.test.*`, `node_modules` and hidden folders; files named explicitly are always imported.
 * TypeScript files are compiled first by `hooks.compileTypeScript` when every file is TypeScript, or
 * else need a loader (tsx), which `hooks.beforeTypeScript` registers before the first import.
 * @throws {@link LoadError} for a missing path, a file that fails to import, or no handlers at all.
 */
export async function loadHandlers(paths: string[], hooks: LoadHooks = {}): Promise<Registry> {
  const registry = new Registry();
  const seen = new Set<unknown>();
  const files = await expand(paths);
  let compiled: ReadonlyMap<string, string> | undefined;
  const sources = files.filter((file) => TYPESCRIPT_FILE.test(file));
  // Only when every handler file is TypeScript: a JavaScript one is imported as it is, and may import
  // TypeScript itself, which only the loader can serve.
  if (sources.length > 0 && sources.length === files.length && hooks.compileTypeScript) {
    try {
      compiled = await hooks.compileTypeScript(sources);
    } catch (error) {
      throw new LoadError(`cannot load ${sources.map(display).join(', ')}: ${oneLine(error)}`);
    }
  }
  if (sources.length > 0 && compiled === undefined) await hooks.beforeTypeScript?.();
  for (const file of files) {
    let exports: Record<string, unknown>;
    try {
      const url = compiled?.get(file) ?? pathToFileURL(file).href;
      exports = (await import(url)) as Record<string, unknown>;
    } catch (error) {
      throw new LoadError(`cannot load ${display(file)}: ${oneLine(error)}`);
    }
    for (const value of exportedValues(exports)) {
      // The same class may be exported twice (named and default) or re-exported by another file.
      if (seen.has(value) || !hasHandlers(value)) continue;
      seen.add(value);
      try {
        registry.addClass(value);
      } catch (error) {
        throw new LoadError(`cannot load ${display(file)}: ${oneLine(error)}`);
      }
    }
  }
  if (isEmpty(registry)) {
    throw new LoadError(
      `no handlers found in ${paths.join(', ')}: export classes with @on.*, @timer or @daemon methods`,
    );
  }
  return registry;
}

/** Whether nothing would run: caches and indexes alone serve no handler, webhooks alone do. */
function isEmpty(registry: Registry): boolean {
  return (
    registry.handlers.length === 0 &&
    registry.activities.length === 0 &&
    registry.admission().length === 0 &&
    registry.conversions().length === 0
  );
}

/** A module's exports; for CommonJS modules (a `.ts` file outside a `"type": "module"` package), those of `module.exports` too. */
function exportedValues(namespace: Record<string, unknown>): unknown[] {
  const values = Object.values(namespace);
  const fallback = namespace.default;
  if (fallback !== null && typeof fallback === 'object') values.push(...Object.values(fallback));
  return values;
}

/** Whether `value` is a class with handler declarations in its decorator metadata. */
export function hasHandlers(value: unknown): value is HandlerClass {
  if (typeof value !== 'function') return false;
  const metadata = (value as unknown as Record<symbol, Record<symbol, unknown> | null | undefined>)[
    METADATA
  ];
  // Any declaration counts: a class with only @on.cache, @on.index, activities or webhooks is loaded too.
  const declared = [HANDLERS, CACHES, INDEXES, ADMISSIONS, CONVERSIONS].some((key) => {
    const declarations = metadata?.[key];
    return Array.isArray(declarations) && declarations.length > 0;
  });
  return declared || activityDeclarationsOf(value).length > 0;
}

/** Absolute module files for the given files and folders, sorted per folder and without duplicates. */
async function expand(paths: readonly string[]): Promise<string[]> {
  const files = new Set<string>();
  for (const path of paths) {
    const absolute = resolve(path);
    const info = await stat(absolute).catch(() => undefined);
    if (!info) throw new LoadError(`${path} does not exist`);
    if (info.isDirectory()) {
      for (const file of await walk(absolute)) files.add(file);
    } else {
      files.add(absolute);
    }
  }
  return [...files];
}

async function walk(dir: string): Promise<string[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
    a.name.localeCompare(b.name),
  );
  const files: string[] = [];
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && !entry.name.startsWith('.'))
        files.push(...(await walk(path)));
    } else if (entry.isFile() && MODULE_FILE.test(entry.name) && !SKIPPED_FILE.test(entry.name)) {
      files.push(path);
    }
  }
  return files;
}

/** A path relative to the working directory when it lies inside it, for shorter messages. */
function display(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? file : rel;
}

/** An error as one line: compilers and loaders report over several lines, the CLI prints one. */
function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const line = message
    .split('\n')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .join(' ');
  return line.length > 500 ? `${line.slice(0, 497)}...` : line || 'unknown error';
}
