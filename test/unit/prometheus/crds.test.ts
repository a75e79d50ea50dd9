import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  loadAllYaml,
  type V1CustomResourceDefinition,
  type V1JSONSchemaProps,
} from '@kubernetes/client-node';
import yaml from 'js-yaml';
import ts from 'typescript';
import {
  matchesSelector,
  selectServiceMonitors,
} from '../../../src/handlers/prometheus/selectors.js';
import type {
  PrometheusResource,
  ServiceMonitorResource,
} from '../../../src/handlers/prometheus/types.js';

const crdFile = fileURLToPath(new URL('../../../crds/monitoring.coreos.com.yaml', import.meta.url));
const exampleFile = fileURLToPath(new URL('../../../examples/prometheus.yaml', import.meta.url));
const metricsServiceFile = fileURLToPath(
  new URL('../../../deploy/46-metrics-service.yaml', import.meta.url),
);
const selfMonitorFile = fileURLToPath(
  new URL('../../../deploy/monitoring/servicemonitor.yaml', import.meta.url),
);
const typesFile = fileURLToPath(
  new URL('../../../src/handlers/prometheus/types.ts', import.meta.url),
);
const reconcileFile = fileURLToPath(
  new URL('../../../src/handlers/prometheus/reconcile.ts', import.meta.url),
);

// loadAllYaml is what readCrds (and so installCrds and `npm start`) uses: it turns schemas into
// client-node models, which drop keywords they do not know, so a misspelt keyword fails below.
const crds = loadAllYaml(readFileSync(crdFile, 'utf8')) as V1CustomResourceDefinition[];

function crd(kind: string): V1CustomResourceDefinition {
  const found = crds.find((c) => c.spec.names.kind === kind);
  if (found === undefined) throw new Error(`no CRD for ${kind}`);
  return found;
}

function version(kind: string) {
  const versions = crd(kind).spec.versions;
  expect(versions).toHaveLength(1);
  return versions[0]!;
}

function schema(kind: string): V1JSONSchemaProps {
  return version(kind).schema!.openAPIV3Schema!;
}

/** Whether unknown fields are kept. Below `items` client-node leaves keys as written. */
function preserves(node: V1JSONSchemaProps): boolean {
  return (
    node.x_kubernetes_preserve_unknown_fields === true ||
    (node as Record<string, unknown>)['x-kubernetes-preserve-unknown-fields'] === true
  );
}

function intOrString(node: V1JSONSchemaProps): boolean {
  return (
    node.x_kubernetes_int_or_string === true ||
    (node as Record<string, unknown>)['x-kubernetes-int-or-string'] === true
  );
}

/**
 * The schema node a field path leads to (`spec.endpoints[].port`; `[]` steps into array items, `{}`
 * into map values), or why there is none. Below a node that preserves unknown fields anything goes.
 */
function lookup(kind: string, path: string): V1JSONSchemaProps | string {
  let node = schema(kind);
  for (const step of path.match(/[^.[\]{}]+|\[\]|\{\}/g) ?? []) {
    if (preserves(node) && node.properties === undefined) return node;
    const next =
      step === '[]'
        ? (node.items as V1JSONSchemaProps | undefined)
        : step === '{}'
          ? (node.additionalProperties as V1JSONSchemaProps | undefined)
          : node.properties?.[step];
    if (next === undefined) return `${kind}: ${path} is not in the schema (no ${step})`;
    node = next;
  }
  return node;
}

/** Every object node must say what it holds, or the API server rejects the schema as not structural. */
function untypedObjects(node: V1JSONSchemaProps, path: string): string[] {
  const here =
    node.type === 'object' &&
    node.properties === undefined &&
    node.additionalProperties === undefined &&
    !preserves(node)
      ? [path]
      : [];
  const children = Object.entries(node.properties ?? {}).flatMap(([key, child]) =>
    untypedObjects(child, `${path}.${key}`),
  );
  const items =
    node.items !== undefined ? untypedObjects(node.items as V1JSONSchemaProps, `${path}[]`) : [];
  return [...here, ...children, ...items];
}

// ---- The fields the code reads, from its TypeScript types --------------------------------------

const program = ts.createProgram([typesFile, reconcileFile], {
  strict: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  skipLibCheck: true,
  noEmit: true,
});
const checker = program.getTypeChecker();

function declaredType(file: string, name: string): ts.Type {
  const source = program.getSourceFile(file)!;
  const declaration = source.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name,
  );
  if (declaration === undefined) throw new Error(`no interface ${name} in ${file}`);
  return checker.getDeclaredTypeOfSymbol(checker.getSymbolAtLocation(declaration.name)!);
}

/**
 * Every field path of a type, as {@link lookup} takes them: the fields of nested objects, array
 * items (`[]`) and map values (`{}`), down to scalars. An object with declared fields and an index
 * signature is a schema object that keeps unknown fields: its declared fields are walked.
 */
function fieldPaths(type: ts.Type, prefix: string): string[] {
  const paths: string[] = [];
  for (const property of checker.getPropertiesOfType(type)) {
    let path = `${prefix}.${property.name}`;
    let propertyType = checker.getNonNullableType(checker.getTypeOfSymbol(property));
    paths.push(path);
    if (checker.isArrayType(propertyType)) {
      propertyType = checker.getTypeArguments(propertyType as ts.TypeReference)[0]!;
      path = `${path}[]`;
    }
    if (!(propertyType.flags & ts.TypeFlags.Object)) continue;
    const mapValue = checker.getIndexTypeOfType(propertyType, ts.IndexKind.String);
    if (mapValue !== undefined && checker.getPropertiesOfType(propertyType).length === 0)
      paths.push(`${path}{}`);
    else paths.push(...fieldPaths(propertyType, path));
  }
  return paths;
}

const readFields: Array<[kind: string, path: string]> = [
  ...fieldPaths(declaredType(typesFile, 'PrometheusSpec'), 'spec').map(
    (p) => ['Prometheus', p] as [string, string],
  ),
  ...fieldPaths(declaredType(reconcileFile, 'PrometheusStatus'), 'status').map(
    (p) => ['Prometheus', p] as [string, string],
  ),
  ...fieldPaths(declaredType(typesFile, 'ServiceMonitorSpec'), 'spec').map(
    (p) => ['ServiceMonitor', p] as [string, string],
  ),
  ...fieldPaths(declaredType(typesFile, 'PodMonitorSpec'), 'spec').map(
    (p) => ['PodMonitor', p] as [string, string],
  ),
];

// ---- Printer columns ---------------------------------------------------------------------------

/** A printer column's JSONPath as a field path: `.spec.endpoints[0].port` → `spec.endpoints[].port`. */
function columnPath(jsonPath: string): string {
  return (jsonPath.match(/\.[A-Za-z_]\w*|\[[^\]]*\]/g) ?? [])
    .map((step) => (step.startsWith('[') ? '[]' : step))
    .join('')
    .replace(/^\./, '');
}

function columns(kind: string): Array<{ name: string; type: string; jsonPath: string }> {
  return (version(kind).additionalPrinterColumns ?? []).map((c) => ({
    name: c.name,
    type: c.type,
    jsonPath: c.jsonPath,
  }));
}

describe('crds/monitoring.coreos.com.yaml', () => {
  test("defines Prometheus, ServiceMonitor, PodMonitor and PrometheusRule in monitoring.coreos.com/v1, namespaced, with upstream's names", () => {
    expect(
      crds.every(
        (c) => c.apiVersion === 'apiextensions.k8s.io/v1' && c.kind === 'CustomResourceDefinition',
      ),
    ).toBe(true);
    expect(
      crds.map((c) => [
        c.metadata?.name,
        c.spec.group,
        c.spec.scope,
        c.spec.names.kind,
        c.spec.names.plural,
      ]),
    ).toEqual([
      [
        'prometheuses.monitoring.coreos.com',
        'monitoring.coreos.com',
        'Namespaced',
        'Prometheus',
        'prometheuses',
      ],
      [
        'servicemonitors.monitoring.coreos.com',
        'monitoring.coreos.com',
        'Namespaced',
        'ServiceMonitor',
        'servicemonitors',
      ],
      [
        'podmonitors.monitoring.coreos.com',
        'monitoring.coreos.com',
        'Namespaced',
        'PodMonitor',
        'podmonitors',
      ],
      [
        'prometheusrules.monitoring.coreos.com',
        'monitoring.coreos.com',
        'Namespaced',
        'PrometheusRule',
        'prometheusrules',
      ],
    ]);
    for (const c of crds)
      expect(c.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([
        ['v1', true, true],
      ]);
  });

  test.each(['Prometheus', 'ServiceMonitor', 'PodMonitor', 'PrometheusRule'])(
    '%s has a structural schema requiring spec',
    (kind) => {
      expect(schema(kind).type).toBe('object');
      expect(schema(kind).required).toEqual(['spec']);
      expect(untypedObjects(schema(kind), kind)).toEqual([]);
    },
  );

  test.each(['Prometheus', 'ServiceMonitor', 'PodMonitor', 'PrometheusRule'])(
    '%s has a status subresource (status is written apart from spec)',
    (kind) => {
      expect(version(kind).subresources?.status).toEqual({});
      expect(lookup(kind, 'status')).toMatchObject({ type: 'object' });
    },
  );

  test.each(['ServiceMonitor', 'PodMonitor', 'PrometheusRule'])(
    "%s status holds upstream's bindings, each with metav1.Condition fields",
    (kind) => {
      for (const field of ['group', 'resource', 'namespace', 'name'])
        expect(lookup(kind, `status.bindings[].${field}`)).toMatchObject({ type: 'string' });
      for (const field of ['type', 'status', 'reason', 'message', 'lastTransitionTime'])
        expect(lookup(kind, `status.bindings[].conditions[].${field}`)).toMatchObject({
          type: 'string',
        });
      expect(lookup(kind, 'status.bindings[].conditions[].observedGeneration')).toMatchObject({
        type: 'integer',
      });
    },
  );

  test('every field the code reads is in the schema, so the API server does not prune it', () => {
    expect(readFields.length).toBeGreaterThan(40); // the type walk found the fields
    const missing = readFields
      .map(([kind, path]) => lookup(kind, path))
      .filter((found): found is string => typeof found === 'string');
    expect(missing).toEqual([]);
  });

  test.each([
    ['Prometheus', 'spec.scrapeTimeout', 'string'],
    ['Prometheus', 'spec.paused', 'boolean'],
    ['Prometheus', 'spec.overrideHonorLabels', 'boolean'],
    ['Prometheus', 'spec.overrideHonorTimestamps', 'boolean'],
    ['ServiceMonitor', 'spec.endpoints[].filterRunning', 'boolean'],
    ['ServiceMonitor', 'spec.endpoints[].honorLabels', 'boolean'],
    ['ServiceMonitor', 'spec.endpoints[].honorTimestamps', 'boolean'],
    ['PodMonitor', 'spec.podMetricsEndpoints[].port', 'string'],
    ['PodMonitor', 'spec.podMetricsEndpoints[].portNumber', 'integer'],
    ['PodMonitor', 'spec.podMetricsEndpoints[].honorTimestamps', 'boolean'],
    ['PodMonitor', 'spec.podMetricsEndpoints[].filterRunning', 'boolean'],
    ['PodMonitor', 'spec.podMetricsEndpoints[].params{}', 'array'],
    ['PrometheusRule', 'spec.groups[].name', 'string'],
    ['PrometheusRule', 'spec.groups[].limit', 'integer'],
    ['PrometheusRule', 'spec.groups[].rules[].keep_firing_for', 'string'],
  ])('%s %s is a %s', (kind, path, type) => {
    expect(lookup(kind, path)).toMatchObject({ type });
  });

  // Upstream manifests carry fields the operator does not act on: kept as written (and named in an
  // IgnoredFields Event), never pruned or refused by kubectl's validation.
  test.each([
    ['Prometheus', 'spec'],
    ['ServiceMonitor', 'spec'],
    ['ServiceMonitor', 'spec.endpoints[]'],
    ['PodMonitor', 'spec'],
    ['PodMonitor', 'spec.podMetricsEndpoints[]'],
    ['PrometheusRule', 'spec'],
    ['PrometheusRule', 'spec.groups[]'],
    ['PrometheusRule', 'spec.groups[].rules[]'],
  ])('%s %s keeps fields the schema does not type', (kind, path) => {
    expect(preserves(lookup(kind, path) as V1JSONSchemaProps)).toBe(true);
  });

  test.each([
    'podMonitorSelector',
    'podMonitorNamespaceSelector',
    'ruleSelector',
    'ruleNamespaceSelector',
  ])('Prometheus %s is a nullable label selector like the ServiceMonitor ones', (field) => {
    expect(lookup('Prometheus', `spec.${field}`)).toEqual(
      lookup('Prometheus', 'spec.serviceMonitorSelector'),
    );
    expect(lookup('Prometheus', `spec.${field}`)).toMatchObject({ type: 'object', nullable: true });
  });

  test.each([
    ['Prometheus', 'spec.serviceDiscoveryRole', ['Endpoints', 'EndpointSlice']],
    ['ServiceMonitor', 'spec.serviceDiscoveryRole', ['Endpoints', 'EndpointSlice']],
    ['ServiceMonitor', 'spec.selectorMechanism', ['RelabelConfig', 'RoleSelector']],
    ['PodMonitor', 'spec.selectorMechanism', ['RelabelConfig', 'RoleSelector']],
  ])("%s %s is one of upstream's values", (kind, path, values) => {
    expect((lookup(kind, path) as V1JSONSchemaProps)._enum).toEqual(values);
  });

  test('PodMonitor targetPort and PrometheusRule expr take a number or a string', () => {
    expect(
      intOrString(
        lookup('PodMonitor', 'spec.podMetricsEndpoints[].targetPort') as V1JSONSchemaProps,
      ),
    ).toBe(true);
    expect(
      intOrString(lookup('PrometheusRule', 'spec.groups[].rules[].expr') as V1JSONSchemaProps),
    ).toBe(true);
  });

  test('PrometheusRule groups need a name and rules an expr', () => {
    expect((lookup('PrometheusRule', 'spec.groups[]') as V1JSONSchemaProps).required).toEqual([
      'name',
    ]);
    expect(
      (lookup('PrometheusRule', 'spec.groups[].rules[]') as V1JSONSchemaProps).required,
    ).toEqual(['expr']);
  });

  test("Prometheus durations are validated with Prometheus' duration syntax", () => {
    for (const field of ['scrapeInterval', 'scrapeTimeout', 'evaluationInterval']) {
      const pattern = new RegExp(
        (lookup('Prometheus', `spec.${field}`) as V1JSONSchemaProps).pattern!,
      );
      for (const ok of ['30s', '1m30s', '500ms', '2h', '0']) expect(pattern.test(ok)).toBe(true);
      for (const bad of ['30', '1.5s', 's', '30s ']) expect(pattern.test(bad)).toBe(false);
    }
  });

  test('ServiceMonitor endpoint targetPort takes a port number or name', () => {
    expect(
      intOrString(lookup('ServiceMonitor', 'spec.endpoints[].targetPort') as V1JSONSchemaProps),
    ).toBe(true);
  });

  test('printer columns', () => {
    expect(columns('Prometheus').map((c) => [c.name, c.jsonPath])).toEqual([
      ['Version', '.spec.version'],
      ['Desired', '.spec.replicas'],
      ['Ready', '.status.availableReplicas'],
      ['Reconciled', ".status.conditions[?(@.type == 'Reconciled')].status"],
      ['Paused', '.status.paused'],
      ['Age', '.metadata.creationTimestamp'],
    ]);
    expect(columns('ServiceMonitor').map((c) => [c.name, c.type, c.jsonPath])).toEqual([
      ['Accepted', 'string', '.status.bindings[0].conditions[?(@.type=="Accepted")].status'],
      ['Prometheus', 'string', '.status.bindings[0].name'],
      ['Port', 'string', '.spec.endpoints[0].port'],
      ['Age', 'date', '.metadata.creationTimestamp'],
    ]);
    expect(columns('PodMonitor').map((c) => [c.name, c.type, c.jsonPath])).toEqual([
      ['Accepted', 'string', '.status.bindings[0].conditions[?(@.type=="Accepted")].status'],
      ['Prometheus', 'string', '.status.bindings[0].name'],
      ['Port', 'string', '.spec.podMetricsEndpoints[0].port'],
      ['Age', 'date', '.metadata.creationTimestamp'],
    ]);
    expect(columns('PrometheusRule').map((c) => [c.name, c.type, c.jsonPath])).toEqual([
      ['Accepted', 'string', '.status.bindings[0].conditions[?(@.type=="Accepted")].status'],
      ['Prometheus', 'string', '.status.bindings[0].name'],
      ['Age', 'date', '.metadata.creationTimestamp'],
    ]);
  });

  test.each(['Prometheus', 'ServiceMonitor', 'PodMonitor', 'PrometheusRule'])(
    "%s printer columns point at schema fields of the column's type",
    (kind) => {
      for (const column of columns(kind)) {
        if (column.jsonPath.startsWith('.metadata.')) continue;
        // The API server prints only a JSONPath's first match: `[*]` would show one value as if it were all.
        expect([column.name, column.jsonPath.includes('[*]')]).toEqual([column.name, false]);
        const field = lookup(kind, columnPath(column.jsonPath));
        expect([column.name, typeof field === 'string' ? field : 'found']).toEqual([
          column.name,
          'found',
        ]);
        expect([column.name, column.type]).toEqual([
          column.name,
          (field as V1JSONSchemaProps).type,
        ]);
      }
    },
  );
});

// ---- examples/prometheus.yaml -----------------------------------------------------------------

/** Fields of `value` the schema does not have (or types it does not allow), as paths. */
function outsideSchema(kind: string, value: unknown, path: string): string[] {
  const node = lookup(kind, path);
  if (typeof node === 'string') return [node];
  if (preserves(node) && node.properties === undefined) return [];
  if (Array.isArray(value)) {
    if (node.type !== 'array')
      return [`${kind}: ${path} is an array, the schema says ${node.type}`];
    return value.flatMap((item) => outsideSchema(kind, item, `${path}[]`));
  }
  if (value !== null && typeof value === 'object') {
    if (node.type !== 'object')
      return [`${kind}: ${path} is an object, the schema says ${node.type}`];
    const step = node.properties === undefined ? '{}' : undefined;
    return Object.entries(value).flatMap(([key, child]) =>
      outsideSchema(kind, child, step ? `${path}{}` : `${path}.${key}`),
    );
  }
  if (intOrString(node))
    return typeof value === 'number' || typeof value === 'string'
      ? []
      : [`${kind}: ${path} must be a number or string`];
  const type =
    typeof value === 'number'
      ? Number.isInteger(value)
        ? ['integer', 'number']
        : ['number']
      : [typeof value];
  if (
    node.pattern !== undefined &&
    typeof value === 'string' &&
    !new RegExp(node.pattern).test(value)
  )
    return [`${kind}: ${path} does not match ${node.pattern}`];
  return type.includes(node.type ?? '')
    ? []
    : [`${kind}: ${path} is ${typeof value}, the schema says ${node.type}`];
}

describe('examples/prometheus.yaml', () => {
  const documents = yaml.loadAll(readFileSync(exampleFile, 'utf8')) as Array<{
    apiVersion: string;
    kind: string;
    spec?: unknown;
  }>;

  test("declares namespaces, the Prometheus's ServiceAccount and its read access, a Prometheus and a ServiceMonitor it selects", () => {
    expect(documents.map((d) => `${d.apiVersion} ${d.kind}`)).toEqual([
      'v1 Namespace',
      'v1 Namespace',
      'v1 ServiceAccount',
      'rbac.authorization.k8s.io/v1 ClusterRole',
      'rbac.authorization.k8s.io/v1 ClusterRoleBinding',
      'monitoring.coreos.com/v1 Prometheus',
      'monitoring.coreos.com/v1 ServiceMonitor',
    ]);
  });

  test('uses only fields (and types) the schema has, so nothing in it is pruned or rejected', () => {
    const custom = documents.filter((d) => d.apiVersion === 'monitoring.coreos.com/v1');
    expect(custom.flatMap((d) => outsideSchema(d.kind, d.spec, 'spec'))).toEqual([]);
  });

  test('the schema check finds fields the schema does not have', () => {
    expect(
      outsideSchema(
        'ServiceMonitor',
        { endpoints: [{ port: 'metrics', filterRuning: false }], selector: {} },
        'spec',
      ),
    ).toEqual([
      'ServiceMonitor: spec.endpoints[].filterRuning is not in the schema (no filterRuning)',
    ]);
    expect(outsideSchema('Prometheus', { replicas: 'two' }, 'spec')).toEqual([
      'Prometheus: spec.replicas is string, the schema says integer',
    ]);
  });
});

describe('deploy/monitoring/servicemonitor.yaml, the operator monitoring itself', () => {
  const monitor = yaml.load(readFileSync(selfMonitorFile, 'utf8')) as ServiceMonitorResource;
  const example = (
    yaml.loadAll(readFileSync(exampleFile, 'utf8')) as (PrometheusResource & { kind: string })[]
  ).find((d) => d.kind === 'Prometheus')!;

  test('uses only fields (and types) the schema has', () => {
    expect(outsideSchema('ServiceMonitor', monitor.spec, 'spec')).toEqual([]);
  });

  test("is selected by examples/prometheus.yaml's Prometheus, and selects deploy/'s metrics Service on its named port", () => {
    const namespaces = [{ name: 'konductor-system', labels: {} }];
    expect(
      selectServiceMonitors(example, [monitor], namespaces).map((m) => m.metadata.name),
    ).toEqual(['konductor']);
    const service = yaml.load(readFileSync(metricsServiceFile, 'utf8')) as {
      metadata: { namespace: string; labels: Record<string, string> };
      spec: { ports: { name: string }[] };
    };
    expect(service.metadata.namespace).toBe(monitor.metadata.namespace);
    expect(matchesSelector(monitor.spec.selector, service.metadata.labels)).toBe(true);
    expect(service.spec.ports.map((port) => port.name)).toContain(monitor.spec.endpoints[0]!.port);
  });
});
