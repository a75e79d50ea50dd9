// Pure part of `konductor types`: reads CustomResourceDefinitions and turns each version's
// `openAPIV3Schema` into plain JSON Schema (draft 4, what json-schema-to-typescript reads), with the
// Kubernetes extensions spelled out, so the generator needs to know nothing about Kubernetes.

import { isPlainObject } from '../../framework/objects/plain-object.js';

/** A JSON Schema (the subset this module writes). `tsType` is json-schema-to-typescript's escape hatch. */
export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: boolean | JsonSchema;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  tsType?: string;
}

/** One served version of a CRD, with the names its generated types get. */
export interface CrdVersion {
  /** `metadata.name` of the CRD, for messages. */
  crd: string;
  group: string;
  version: string;
  kind: string;
  /** The resource's plural, e.g. `widgets`. */
  plural: string;
  /** The object's interface name; `<name>Spec` and `<name>Status` name the spec and status. */
  typeName: string;
  /** The CRD's schema for this version, as written (Kubernetes dialect). */
  schema: Record<string, unknown>;
}

/** A CRD the generator cannot use; the message names the CRD (or document) and what to fix. */
export class CrdSchemaError extends Error {
  override readonly name = 'CrdSchemaError';
}

// Kinds become interface names, so they must be identifiers; Kubernetes kinds are PascalCase anyway.
const KIND = /^[A-Z][A-Za-z0-9]*$/;
// Kubernetes version names (v1, v1beta2, v2alpha1).
const VERSION = /^v[0-9]+((alpha|beta)[0-9]+)?$/;

/** `v1beta2` → `V1Beta2`, for the names of a CRD's non-storage versions (as the generator capitalises titles). */
function pascal(version: string): string {
  return version
    .replace(/^v/, 'V')
    .replace(/(alpha|beta)/, (word) => word.charAt(0).toUpperCase() + word.slice(1));
}

/**
 * The versions of one parsed YAML document that is a CRD with schemas. The storage version's types
 * are named after the kind (`Widget`, `WidgetSpec`, `WidgetStatus`); other versions add the version
 * (`WidgetV1Alpha1`), so one file can hold all of them. Documents that are not CRDs are skipped
 * (a CRD file may carry other objects); a CRD without a schema is an error, since it has no types.
 */
export function crdVersions(document: unknown, where: string): CrdVersion[] {
  if (!isPlainObject(document) || document.kind !== 'CustomResourceDefinition') return [];
  const metadata = isPlainObject(document.metadata) ? document.metadata : {};
  const crd = typeof metadata.name === 'string' ? metadata.name : '(unnamed)';
  const at = `${where}: CustomResourceDefinition ${crd}`;
  if (document.apiVersion !== 'apiextensions.k8s.io/v1') {
    throw new CrdSchemaError(
      `${at}: apiVersion is ${String(document.apiVersion)}; only apiextensions.k8s.io/v1 CRDs (with per-version schemas) are supported`,
    );
  }
  const spec = isPlainObject(document.spec) ? document.spec : {};
  const names = isPlainObject(spec.names) ? spec.names : {};
  const kind = names.kind;
  if (typeof kind !== 'string' || !KIND.test(kind)) {
    throw new CrdSchemaError(
      `${at}: spec.names.kind must be a PascalCase identifier (e.g. Widget), got ${JSON.stringify(kind)}`,
    );
  }
  const plural = names.plural;
  if (typeof plural !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(plural)) {
    throw new CrdSchemaError(
      `${at}: spec.names.plural must be a lower-case name (e.g. widgets), got ${JSON.stringify(plural)}`,
    );
  }
  const group = typeof spec.group === 'string' ? spec.group : '';
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isPlainObject) : [];
  if (versions.length === 0) throw new CrdSchemaError(`${at}: spec.versions is empty`);
  const result: CrdVersion[] = [];
  for (const entry of versions) {
    const version = entry.name;
    if (typeof version !== 'string' || !VERSION.test(version)) {
      throw new CrdSchemaError(
        `${at}: version name ${JSON.stringify(version)} is not a Kubernetes version (v1, v1beta2, ...)`,
      );
    }
    const schema = isPlainObject(entry.schema) ? entry.schema.openAPIV3Schema : undefined;
    if (!isPlainObject(schema)) {
      throw new CrdSchemaError(
        `${at}: version ${version} has no schema.openAPIV3Schema to generate types from`,
      );
    }
    const plain = versions.length === 1 || entry.storage === true;
    result.push({
      crd,
      group,
      version,
      kind,
      plural,
      typeName: plain ? kind : `${kind}${pascal(version)}`,
      schema,
    });
  }
  return result;
}

/**
 * One Kubernetes structural schema node as plain JSON Schema:
 * - `nullable: true` → `anyOf: [schema, {type: 'null'}]`;
 * - `x-kubernetes-int-or-string` → `anyOf: [{type: 'integer'}, {type: 'string'}]`;
 * - `x-kubernetes-preserve-unknown-fields` → `additionalProperties: true` (any value when untyped);
 * - `x-kubernetes-embedded-resource` → `apiVersion`, `kind` and `metadata` declared;
 * - every other object is closed (`additionalProperties: false`), as the API server prunes unknown fields;
 * - `description` and `default` become the TSDoc text.
 * Validation-only keywords (`pattern`, `minimum`, `minItems`, value `anyOf`/`allOf`/`oneOf`/`not`,
 * `format`, `title`) are dropped: a structural schema's types never depend on them.
 */
export function toJsonSchema(node: unknown, path: string): JsonSchema {
  if (!isPlainObject(node))
    throw new CrdSchemaError(`${path}: a schema must be an object, got ${JSON.stringify(node)}`);
  const result: JsonSchema = {};
  const description = typeof node.description === 'string' ? node.description.trim() : '';
  // The API server fills in defaults, so a reader wants to see them (TSDoc's @defaultValue).
  const fallback =
    node.default === undefined ? '' : `@defaultValue \`${JSON.stringify(node.default)}\``;
  const documentation = [description, fallback].filter((part) => part !== '').join('\n\n');
  if (documentation !== '') result.description = documentation;
  const typed = typeOf(node, path);
  const withNull = node.nullable === true ? { anyOf: [typed, { type: 'null' }] } : typed;
  return { ...result, ...withNull };
}

/** The type part of a schema node (no description, no nullability). */
function typeOf(node: Record<string, unknown>, path: string): JsonSchema {
  if (node['x-kubernetes-int-or-string'] === true)
    return { anyOf: [{ type: 'integer' }, { type: 'string' }] };
  const preserve = node['x-kubernetes-preserve-unknown-fields'] === true;
  const type = node.type;
  if (type === undefined) {
    // Only allowed with preserve-unknown-fields (or int-or-string): any JSON value.
    if (preserve) return {};
    if (node.properties === undefined && node.items === undefined) return {};
  }
  if (type !== undefined && typeof type !== 'string')
    throw new CrdSchemaError(`${path}: type must be a string, got ${JSON.stringify(type)}`);
  const result: JsonSchema = {};
  if (type !== undefined) result.type = type;
  if (Array.isArray(node.enum)) result.enum = [...node.enum];
  if (type === 'array' || node.items !== undefined) {
    result.items = node.items === undefined ? {} : toJsonSchema(node.items, `${path}[]`);
  }
  if (
    type === 'object' ||
    node.properties !== undefined ||
    node.additionalProperties !== undefined ||
    preserve
  ) {
    const properties: Record<string, JsonSchema> = {};
    if (node['x-kubernetes-embedded-resource'] === true) {
      properties.apiVersion = { type: 'string' };
      properties.kind = { type: 'string' };
      properties.metadata = { type: 'object', additionalProperties: true };
    }
    if (node.properties !== undefined) {
      if (!isPlainObject(node.properties))
        throw new CrdSchemaError(`${path}: properties must be an object`);
      for (const [name, child] of Object.entries(node.properties))
        properties[name] = toJsonSchema(child, `${path}.${name}`);
    }
    if (Object.keys(properties).length > 0) result.properties = properties;
    const required = Array.isArray(node.required)
      ? node.required.filter((name): name is string => typeof name === 'string')
      : [];
    if (required.length > 0) result.required = required;
    const additional = node.additionalProperties;
    if (preserve) result.additionalProperties = true;
    else if (isPlainObject(additional))
      result.additionalProperties = toJsonSchema(additional, `${path}.*`);
    else result.additionalProperties = additional === true;
  }
  return result;
}

/** Options of {@link objectSchema}. */
export interface ObjectSchemaOptions {
  /** The TypeScript type of `metadata` (the module that declares it is imported by the caller). */
  metadataType: string;
}

/**
 * The whole object of one CRD version as JSON Schema: `apiVersion` and `kind` as literals, `metadata`
 * as `metadataType`, and `spec`/`status` titled `<name>Spec`/`<name>Status` so the generator names
 * them. Other top-level fields (rare, but allowed) are kept.
 */
export function objectSchema(version: CrdVersion, options: ObjectSchemaOptions): JsonSchema {
  const root = toJsonSchema(version.schema, `${version.crd} ${version.version} openAPIV3Schema`);
  if (root.anyOf !== undefined)
    throw new CrdSchemaError(
      `${version.crd} ${version.version}: the root schema cannot be nullable`,
    );
  const apiVersion = version.group === '' ? version.version : `${version.group}/${version.version}`;
  const properties: Record<string, JsonSchema> = {
    apiVersion: { type: 'string', enum: [apiVersion] },
    kind: { type: 'string', enum: [version.kind] },
    metadata: { tsType: options.metadataType },
  };
  for (const [name, child] of Object.entries(root.properties ?? {})) {
    if (name === 'apiVersion' || name === 'kind' || name === 'metadata') continue;
    properties[name] =
      name === 'spec' || name === 'status'
        ? titled(child, `${version.typeName}${name === 'spec' ? 'Spec' : 'Status'}`)
        : child;
  }
  const required = [
    'apiVersion',
    'kind',
    'metadata',
    ...(root.required ?? []).filter((name) => !['apiVersion', 'kind', 'metadata'].includes(name)),
  ];
  const description =
    root.description ??
    `${version.kind} (${apiVersion}), from CustomResourceDefinition ${version.crd}.`;
  return {
    title: version.typeName,
    description,
    type: 'object',
    properties,
    required,
    additionalProperties: root.additionalProperties ?? false,
  };
}

/** Gives an object schema (or the object branch of a nullable one) a title, so it becomes a named interface. */
function titled(schema: JsonSchema, title: string): JsonSchema {
  if (schema.anyOf !== undefined) {
    return {
      ...schema,
      anyOf: schema.anyOf.map((branch) =>
        branch.type === 'null' ? branch : titled(branch, title),
      ),
    };
  }
  return schema.type === 'object' ? { ...schema, title } : schema;
}
