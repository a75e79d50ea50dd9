// `konductor init <dir>`: a new operator project. Its flags name the project; none has a variable.
import { FlagReader, parseFlags, type CommandSpec, type FlagTable } from '../flags.js';
import * as check from '../validators.js';
import { UsageError, type Setting } from '../validators.js';

/** API group of the example resource of `konductor init`. */
export const DEFAULT_INIT_GROUP = 'example.com';

/** What `konductor init <dir>` was asked to create. */
export interface InitOptions {
  /** Folder of the new project, as given; it must be missing or empty. */
  dir: string;
  /** npm package name of the project; default: derived from the folder's name. */
  name?: string;
  /** API group of the example CRD (default `example.com`). */
  group: string;
  /** Version range of konductor in the new package.json; default `^<this version>`. */
  konductor?: string;
}

/** The flags of `init`. */
export const INIT_FLAGS = {
  name: {
    value: '<name>',
    defaultNote: "from the folder's name",
    description: 'npm package name',
    parse: (setting: Setting) => {
      if (!check.isPackageName(setting.value)) {
        throw new UsageError(
          `${setting.source} '${setting.value}' is not an npm package name: use lowercase letters, digits, '-', '.' ` +
            "and '_' (optionally @scope/name)",
        );
      }
      return setting.value;
    },
  },
  group: {
    value: '<group>',
    default: DEFAULT_INIT_GROUP,
    description: 'API group of the example resource',
    parse: check.apiGroup,
  },
  konductor: {
    value: '<version>',
    defaultNote: '^ this version',
    description: 'konductor version range in package.json',
    parse: (setting: Setting) => {
      if (setting.value.trim() === '' || /\s/.test(setting.value)) {
        throw new UsageError(
          `${setting.source} '${setting.value}' is not a version range: ` +
            'use e.g. ^0.1.0, a tarball path or a URL, without spaces',
        );
      }
      return setting.value;
    },
  },
  help: { short: 'h', description: 'Show this help' },
} satisfies FlagTable;

/** `konductor init`. */
export const INIT: CommandSpec<typeof INIT_FLAGS> = {
  name: 'init',
  args: '<dir>',
  summary: 'Create a new operator project (handlers, CRD, test, Dockerfile, deploy/).',
  description: `Creates a new operator project in <dir> (which must be missing or empty): package.json,
tsconfig.json, src/handlers.ts (a reconcile that keeps a ConfigMap, a create handler and a timer
on an example custom resource), its CRD in crds/, an integration test on a real control plane
in test/, a Dockerfile and deploy/ (ServiceAccount, RBAC and a hardened Deployment).`,
  footer: 'Then:  cd <dir> && npm install && npm test',
  flags: INIT_FLAGS,
};

/**
 * `konductor init <dir> [options]`, or the ask for its help.
 * @throws {@link UsageError} for a missing or second folder, or a refused flag value.
 */
export function parseInit(
  args: readonly string[],
): { help: true } | { help: false; options: InitOptions } {
  const { values, positionals } = parseFlags(INIT, args);
  if (values.help) return { help: true };
  if (positionals.length === 0)
    throw new UsageError('init needs the folder of the new project: konductor init <dir>');
  if (positionals.length > 1)
    throw new UsageError(
      `init takes one folder, got ${positionals.length}: ${positionals.join(' ')}`,
    );
  const dir = positionals[0]!;
  if (dir.trim() === '')
    throw new UsageError('init needs the folder of the new project: konductor init <dir>');
  const reader = new FlagReader(INIT_FLAGS, values, {});
  const group = reader.get('group');
  return {
    help: false,
    options: { dir, name: reader.get('name'), group, konductor: reader.get('konductor') },
  };
}
