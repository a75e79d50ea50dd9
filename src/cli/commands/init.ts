// `konductor init <dir>`: writes a new operator project from the templates in ../templates.
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import type { InitOptions } from '../options/init.js';
import { isPackageName } from '../validators.js';
import { projectFiles, type ProjectSettings } from '../templates/index.js';

/** A target folder that is not empty, or a name that cannot be derived: one line, exit code 1. */
export class InitError extends Error {
  override readonly name = 'InitError';
}

/** tsx's range when konductor's own package.json cannot say (it always can when installed). */
const FALLBACK_TSX = '^4.20.0';

/** The settings of a new project from the options, the folder's name, and this konductor's version. */
export function projectSettings(
  options: InitOptions,
  ownVersion: string,
  ownTsx: string | undefined,
): ProjectSettings {
  const packageName = options.name ?? packageNameFor(basename(resolve(options.dir)));
  return {
    packageName,
    appName: dnsLabelFor(packageName),
    group: options.group,
    konductor: options.konductor ?? `^${ownVersion}`,
    tsx: ownTsx ?? FALLBACK_TSX,
  };
}

/** An npm name from a folder's name (`My Operator` → `my-operator`). */
export function packageNameFor(folder: string): string {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .replace(/-+$/, '')
    .slice(0, 214);
  if (!isPackageName(name))
    throw new InitError(
      `cannot make a package name from the folder name '${folder}': give one with --name`,
    );
  return name;
}

/** A Kubernetes object name (DNS-1123 label) from a package name (`@acme/db.operator` → `db-operator`). */
export function dnsLabelFor(packageName: string): string {
  const label = (packageName.split('/').at(-1) ?? packageName)
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  return label === '' ? 'operator' : label;
}

/**
 * Creates the project in `options.dir`, which must be missing or empty, and prints what to do next.
 * Files are created exclusively (never overwriting), so a folder filled meanwhile is not clobbered.
 */
export async function init(options: InitOptions, ownVersion: string): Promise<void> {
  const target = resolve(options.dir);
  const info = await stat(target).catch(() => undefined);
  if (info && !info.isDirectory()) throw new InitError(`${options.dir} exists and is not a folder`);
  if (info && (await readdir(target)).length > 0)
    throw new InitError(`${options.dir} is not empty: give a new or empty folder`);

  const settings = projectSettings(options, ownVersion, ownTsxRange());
  const files = projectFiles(settings);
  for (const [path, contents] of files) {
    const file = join(target, ...path.split('/'));
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, contents, { flag: 'wx' });
  }

  // Relative when inside the working folder (what the user typed, usually), else absolute.
  const inside = relative(process.cwd(), target);
  const shown =
    inside === '' ? '.' : inside.startsWith('..') || isAbsolute(inside) ? target : inside;
  const cd = /^[\w./-]+$/.test(shown) ? shown : `'${shown.replace(/'/g, `'\\''`)}'`;
  process.stdout.write(
    [
      `Created ${settings.packageName} in ${shown}:`,
      ...[...files.keys()].map((path) => `  ${path}`),
      '',
      'Next:',
      `  cd ${cd} && npm install && npm test`,
      '  npm run dev        # against your current kubeconfig, after: kubectl apply -f crds/',
      '',
    ].join('\n'),
  );
}

/** The tsx range konductor depends on (src/cli and dist/cli are both two levels below the package root). */
function ownTsxRange(): string | undefined {
  try {
    const pkg = JSON.parse(
      readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
    ) as { dependencies?: Record<string, string> };
    return pkg.dependencies?.tsx;
  } catch {
    return undefined;
  }
}
