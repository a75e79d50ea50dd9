import { readFileSync } from 'node:fs';
import { loadAll } from 'js-yaml';
import {
  CrdSchemaError,
  crdVersions,
  objectSchema,
  toJsonSchema,
} from '../../../src/cli/commands/types-crd-schema.js';

const fixture = (name: string): unknown[] =>
  loadAll(readFileSync(new URL(`../../fixtures/crds-types/${name}`, import.meta.url), 'utf8'));

/** The CrdSchemaError `run` throws (fails the test if it throws nothing or something else). */
function schemaError(run: () => unknown): CrdSchemaError {
  try {
    run();
  } catch (error) {
    if (error instanceof CrdSchemaError) return error;
    throw error;
  }
  throw new Error('expected a CrdSchemaError');
}

const crd = (
  overrides: Record<string, unknown> = {},
  version: Record<string, unknown> = {},
): Record<string, unknown> => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com' },
  spec: {
    group: 'example.com',
    names: { plural: 'widgets', kind: 'Widget' },
    versions: [
      { name: 'v1', storage: true, schema: { openAPIV3Schema: { type: 'object' } }, ...version },
    ],
    ...overrides,
  },
});

describe('CRD schemas as plain JSON Schema (konductor types)', () => {
  test('nullable becomes anyOf with null, keeping the description outside', () => {
    expect(toJsonSchema({ type: 'string', nullable: true, description: 'Phase.' }, 'x')).toEqual({
      description: 'Phase.',
      anyOf: [{ type: 'string' }, { type: 'null' }],
    });
  });

  test('a default is documented after the description (the API server fills it in)', () => {
    expect(
      toJsonSchema({ type: 'string', description: 'Image.', default: 'quay.io/coreos/etcd' }, 'x')
        .description,
    ).toBe('Image.\n\n@defaultValue `"quay.io/coreos/etcd"`');
    expect(toJsonSchema({ type: 'integer', default: 1 }, 'x').description).toBe(
      '@defaultValue `1`',
    );
  });

  test('x-kubernetes-int-or-string becomes integer or string', () => {
    expect(toJsonSchema({ 'x-kubernetes-int-or-string': true }, 'x')).toEqual({
      anyOf: [{ type: 'integer' }, { type: 'string' }],
    });
  });

  test('x-kubernetes-preserve-unknown-fields opens the object; an untyped one is any value', () => {
    expect(
      toJsonSchema(
        {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: { image: { type: 'string' } },
        },
        'x',
      ),
    ).toEqual({
      type: 'object',
      properties: { image: { type: 'string' } },
      additionalProperties: true,
    });
    expect(toJsonSchema({ 'x-kubernetes-preserve-unknown-fields': true }, 'x')).toEqual({});
  });

  test('objects without preserve-unknown-fields are closed, as the API server prunes unknown fields', () => {
    expect(
      toJsonSchema({ type: 'object', properties: { size: { type: 'integer' } } }, 'x'),
    ).toEqual({
      type: 'object',
      properties: { size: { type: 'integer' } },
      additionalProperties: false,
    });
  });

  test('maps keep their value schema', () => {
    expect(toJsonSchema({ type: 'object', additionalProperties: { type: 'string' } }, 'x')).toEqual(
      {
        type: 'object',
        additionalProperties: { type: 'string' },
      },
    );
  });

  test('enums and required carry over; validation-only keywords do not', () => {
    const schema = {
      type: 'object',
      required: ['color'],
      properties: {
        color: { type: 'string', enum: ['red', 'blue'], pattern: '^[a-z]+$' },
        tags: { type: 'array', minItems: 1, maxItems: 3, items: { type: 'string', minLength: 1 } },
      },
      anyOf: [{ required: ['color'] }],
    };
    expect(toJsonSchema(schema, 'x')).toEqual({
      type: 'object',
      required: ['color'],
      properties: {
        color: { type: 'string', enum: ['red', 'blue'] },
        tags: { type: 'array', items: { type: 'string' } },
      },
      additionalProperties: false,
    });
  });

  test('embedded resources declare apiVersion, kind and metadata', () => {
    const schema = toJsonSchema(
      {
        type: 'object',
        'x-kubernetes-embedded-resource': true,
        'x-kubernetes-preserve-unknown-fields': true,
      },
      'x',
    );
    expect(Object.keys(schema.properties ?? {})).toEqual(['apiVersion', 'kind', 'metadata']);
  });

  test('a schema that is not an object is an error naming its path', () => {
    expect(
      schemaError(() => toJsonSchema({ type: 'object', properties: { size: 3 } }, 'Widget.spec'))
        .message,
    ).toMatch(/Widget\.spec\.size/);
  });

  test('the object has literal apiVersion and kind, the metadata type, and titled spec and status', () => {
    const [version] = crdVersions(fixture('widgets.yaml')[0], 'widgets.yaml');
    const schema = objectSchema(version!, { metadataType: 'Meta' });
    expect(schema.title).toBe('Widget');
    expect(schema.properties?.apiVersion).toEqual({ type: 'string', enum: ['example.com/v1'] });
    expect(schema.properties?.kind).toEqual({ type: 'string', enum: ['Widget'] });
    expect(schema.properties?.metadata).toEqual({ tsType: 'Meta' });
    expect(schema.properties?.spec?.title).toBe('WidgetSpec');
    expect(schema.properties?.status?.title).toBe('WidgetStatus');
    expect(schema.required).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
    expect(schema.description).toBe('A widget the example operator looks after.');
  });

  test('documents that are not CRDs are skipped', () => {
    expect(
      fixture('widgets.yaml')
        .flatMap((document) => crdVersions(document, 'widgets.yaml'))
        .map((version) => version.typeName),
    ).toEqual(['Widget']);
  });

  test('the storage version gets the plain names, other versions add their version', () => {
    const versions = crdVersions(fixture('gadgets-two-versions.yaml')[0], 'gadgets.yaml');
    expect(versions.map((version) => [version.version, version.typeName])).toEqual([
      ['v1alpha1', 'GadgetV1Alpha1'],
      ['v1', 'Gadget'],
    ]);
  });

  test('a kind that is not an identifier is refused with the CRD name', () => {
    const error = schemaError(() =>
      crdVersions(crd({ names: { plural: 'widgets', kind: 'my-widget' } }), 'w.yaml'),
    );
    expect(error.message).toMatch(
      /w\.yaml: CustomResourceDefinition widgets\.example\.com: spec\.names\.kind/,
    );
  });

  test('a version without a schema is refused: there is nothing to generate from', () => {
    expect(
      schemaError(() => crdVersions(crd({}, { schema: undefined }), 'w.yaml')).message,
    ).toMatch(/version v1 has no schema\.openAPIV3Schema/);
  });

  test('apiextensions v1beta1 CRDs are refused with what to use instead', () => {
    expect(
      schemaError(() =>
        crdVersions({ ...crd(), apiVersion: 'apiextensions.k8s.io/v1beta1' }, 'w.yaml'),
      ).message,
    ).toMatch(/only apiextensions\.k8s\.io\/v1/);
  });
});
