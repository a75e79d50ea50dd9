// `konductor types <crd.yaml|folder>...`: TypeScript types from CRDs. Declared apart from the
// generator so the help and the reference do not load json-schema-to-typescript.
import { FlagReader, parseFlags, type CommandSpec, type FlagTable } from '../flags.js';
import { UsageError, type Setting } from '../validators.js';

/** Module that `konductor types` output imports `KubeObject` and `defineKind` from, unless told. */
export const DEFAULT_TYPES_IMPORT = 'konductor';

/** What `konductor types` was asked to do. */
export interface TypesOptions {
  /** CRD files or folders, as given. */
  paths: string[];
  /** File to write instead of stdout. */
  out?: string;
  /** Module the generated code imports from. */
  importFrom: string;
}

/** The flags of `types`. */
export const TYPES_FLAGS = {
  out: {
    short: 'o',
    value: '<file>',
    description: 'Write to this file instead of stdout (folders are created)',
  },
  'import-from': {
    value: '<module>',
    default: DEFAULT_TYPES_IMPORT,
    description: 'Module that exports KubeObject and defineKind',
    parse: (setting: Setting) => {
      if (!/^[@a-zA-Z0-9._/-]+$/.test(setting.value))
        throw new UsageError(`${setting.source} '${setting.value}' is not a module name`);
      return setting.value;
    },
  },
  help: { short: 'h', description: 'Show this help' },
} satisfies FlagTable;

/** `konductor types`. */
export const TYPES: CommandSpec<typeof TYPES_FLAGS> = {
  name: 'types',
  args: '<crd.yaml|folder>...',
  output: 'types.ts',
  summary: 'Print TypeScript types for the custom resources of CRD files.',
  description: `Prints TypeScript interfaces for the custom resources the given CRD files define (a folder means
its *.yaml and *.yml files). For each version of each CRD: <Kind>Spec, <Kind>Status and the
object <Kind> (apiVersion, kind, metadata, spec, status), from the version's openAPIV3Schema:
enums become unions, required fields are not optional, nullable adds | null,
x-kubernetes-int-or-string is number | string, x-kubernetes-preserve-unknown-fields adds an
index signature, descriptions become TSDoc. Objects without preserve-unknown-fields are closed,
as the API server prunes unknown fields. The storage version gets the plain names; other
versions add theirs (WidgetV1Alpha1). Each version also gets a kind of the same name, a value
that carries apiVersion, kind, plural and the type, for decorators and the client:

  @on.reconcile(Widget, { owns: [kinds.ConfigMap] })
  async reconcile({ spec, patch }: ReconcileContext<Widget>) { patch.status.phase = 'Ready'; }`,
  flags: TYPES_FLAGS,
};

/**
 * `konductor types <crd.yaml|folder>... [options]`, or the ask for its help.
 * @throws {@link UsageError} without a CRD file, or for a refused flag value.
 */
export function parseTypes(
  args: readonly string[],
): { help: true } | { help: false; options: TypesOptions } {
  const { values, positionals } = parseFlags(TYPES, args);
  if (values.help) return { help: true };
  if (positionals.length === 0) {
    throw new UsageError(
      'types needs at least one CRD file or folder: konductor types <crd.yaml>... (see konductor types --help)',
    );
  }
  const reader = new FlagReader(TYPES_FLAGS, values, {});
  return {
    help: false,
    options: { paths: positionals, importFrom: reader.get('import-from'), out: reader.get('out') },
  };
}
