// `konductor types <crd.yaml...>`: TypeScript interfaces for custom resources, generated from their
// CRDs' openAPIV3Schema by json-schema-to-typescript (./types-crd-schema.ts speaks Kubernetes to it).
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadAll } from 'js-yaml';
import { compile } from 'json-schema-to-typescript';
import { UsageError } from '../options.js';
import { CrdSchemaError, crdVersions, objectSchema, type CrdVersion } from './types-crd-schema.js';

const DEFAULT_IMPORT = 'konductor';

/** Help text for `konductor types --help`. */
export const TYPES_HELP = `Usage: konductor types <crd.yaml|folder>... [options] > types.ts

Prints TypeScript interfaces for the custom resources the given CRD files define (a folder means
its *.yaml and *.yml files). For each version of each CRD: <Kind>Spec, <Kind>Status and the
object <Kind> (apiVersion, kind, metadata, spec, status), from the version's openAPIV3Schema:
enums become unions, required fields are not optional, nullable adds | null,
x-kubernetes-int-or-string is number | string, x-kubernetes-preserve-unknown-fields adds an
index signature, descriptions become TSDoc. Objects without preserve-unknown-fields are closed,
as the API server prunes unknown fields. The storage version gets the plain names; other
versions add theirs (WidgetV1Alpha1). Each version also gets a kind of the same name, a value
that carries apiVersion, kind, plural and the type, for decorators and the client:

  @on.reconcile(Widget, { owns: [kinds.ConfigMap] })
  async reconcile({ spec, patch }: ReconcileContext<Widget>) { patch.status.phase = 'Ready'; }

Options:
  -o, --out <file>             Write to this file instead of stdout (folders are created).
      --import-from <module>   Module that exports KubeObject and defineKind (default '${DEFAULT_IMPORT}').
  -h, --help                   Show this help.
`;

const OPTIONS = {
  out: { type: 'string', short: 'o' },
  'import-from': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** One CRD file's contents and the name the generated header mentions. */
export interface CrdSource {
  name: string;
  text: string;
}

/** Options of {@link generateTypes}. */
export interface GenerateOptions {
  /** Module that exports `KubeObject` and `defineKind`; default `konductor`. */
  importFrom?: string;
}

/**
 * The TypeScript module for the CRDs in `sources`: the same input always gives the same text, so
 * generated files can be committed and checked for drift.
 * @throws {@link CrdSchemaError} naming the file and CRD when a CRD cannot be used.
 */
export async function generateTypes(sources: readonly CrdSource[], options: GenerateOptions = {}): Promise<string> {
  const importFrom = options.importFrom ?? DEFAULT_IMPORT;
  const versions: CrdVersion[] = [];
  for (const source of sources) {
    let documents: unknown[];
    try {
      documents = loadAll(source.text);
    } catch (error) {
      throw new CrdSchemaError(`${source.name}: not YAML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    }
    versions.push(...documents.flatMap((document) => crdVersions(document, source.name)));
  }
  if (versions.length === 0) throw new CrdSchemaError(`${sources.map((source) => source.name).join(', ')}: no CustomResourceDefinition found`);
  const seen = new Map<string, CrdVersion>();
  for (const version of versions) {
    const earlier = seen.get(version.typeName);
    if (earlier) {
      throw new CrdSchemaError(
        `${version.crd} ${version.version} and ${earlier.crd} ${earlier.version} would both be named ${version.typeName}: generate them into separate files`,
      );
    }
    seen.set(version.typeName, version);
  }
  const parts: string[] = [];
  for (const version of versions) {
    const schema = objectSchema(version, { metadataType: "NonNullable<KubeObject['metadata']>" });
    // The generator's types follow the JSON Schema type (no `any`): its options are set so the output
    // depends only on the schema (no banner, no $ref resolution against the working directory).
    const code = await compile(schema as Parameters<typeof compile>[0], version.typeName, {
      bannerComment: '',
      additionalProperties: false,
      declareExternallyReferenced: true,
      enableConstEnums: false,
      format: true,
      strictIndexSignatures: false,
      unknownAny: true,
      unreachableDefinitions: false,
      style: { singleQuote: true, printWidth: 120, trailingComma: 'all' },
    });
    // The kind value beside its type: `@on.reconcile(Widget)`, `client.resource(Widget)`.
    const apiVersion = version.group ? `${version.group}/${version.version}` : version.version;
    const kind = [
      `/** The ${version.kind} kind (${apiVersion}), for decorators and the client: \`@on.reconcile(${version.typeName})\`. */`,
      `export const ${version.typeName} = defineKind<${version.typeName}>('${apiVersion}', '${version.kind}', '${version.plural}');`,
    ].join('\n');
    parts.push(`${code.trim()}\n${kind}`);
  }
  // File names go into a comment: nothing but printable ASCII, so no name can end the comment's line.
  const names = sources.map((source) => source.name.replace(/[^\x20-\x7e]/g, '?')).join(', ');
  const header = [
    `// Generated by \`konductor types\` from ${names}. Do not edit:`,
    '// change the CRDs and generate again.',
    `import { defineKind, type KubeObject } from '${importFrom}';`,
  ];
  return `${header.join('\n')}\n\n${parts.join('\n\n')}\n`;
}

/** `konductor types <crd.yaml|folder>... [--out file]`. */
export async function typesCommand(args: readonly string[]): Promise<void> {
  const { values, positionals } = parse(args);
  if (values.help) {
    process.stdout.write(TYPES_HELP);
    return;
  }
  if (positionals.length === 0) throw new UsageError('types needs at least one CRD file or folder: konductor types <crd.yaml>... (see konductor types --help)');
  const importFrom = values['import-from'];
  if (importFrom !== undefined && !/^[@a-zA-Z0-9._/-]+$/.test(importFrom)) {
    throw new UsageError(`--import-from '${importFrom}' is not a module name`);
  }
  const sources = positionals.flatMap(readSources);
  let code: string;
  try {
    code = await generateTypes(sources, { importFrom });
  } catch (error) {
    if (error instanceof CrdSchemaError) throw new UsageError(error.message);
    throw error;
  }
  if (values.out === undefined) {
    process.stdout.write(code);
    return;
  }
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, code);
}

function parse(args: readonly string[]): ReturnType<typeof parseStrict> {
  try {
    return parseStrict(args);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UsageError(`${message.split('\n')[0] ?? message} (see konductor types --help)`);
  }
}

function parseStrict(args: readonly string[]) {
  return parseArgs({ args: [...args], options: OPTIONS, allowPositionals: true, strict: true });
}

/** A CRD file, or a folder's *.yaml/*.yml files in name order; named by file name in the header. */
function readSources(path: string): CrdSource[] {
  const info = statSync(path, { throwIfNoEntry: false });
  if (!info) throw new UsageError(`${path} does not exist`);
  const files = info.isDirectory()
    ? readdirSync(path)
        .filter((file) => /\.ya?ml$/.test(file))
        .sort()
        .map((file) => join(path, file))
    : [path];
  if (files.length === 0) throw new UsageError(`${path} has no .yaml or .yml files`);
  return files.map((file) => ({ name: basename(file), text: readFileSync(file, 'utf8') }));
}
