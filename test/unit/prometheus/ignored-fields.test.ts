import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import {
  ignoredFields,
  ignoredFieldsMessage,
  SUPPORTED_FIELDS,
  type MonitoringKind,
  type Supported,
} from '../../../src/handlers/prometheus/index.js';

const crdFile = fileURLToPath(new URL('../../../crds/monitoring.coreos.com.yaml', import.meta.url));

interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

interface Crd {
  spec: { names: { kind: string }; versions: Array<{ schema: { openAPIV3Schema: SchemaNode } }> };
}

const crds = yaml.loadAll(readFileSync(crdFile, 'utf8')) as Crd[];

/**
 * What the schema lets through below a node, as a {@link Supported} shape: where it preserves unknown
 * fields next to typed ones, the typed ones; anything it types completely is one field.
 */
function shapeOf(node: SchemaNode): Supported {
  if (node.type === 'array' && node.items !== undefined) {
    const item = shapeOf(node.items);
    return item === true ? true : [item];
  }
  if (node.properties === undefined) return true;
  const fields = Object.fromEntries(
    Object.entries(node.properties).map(([key, child]) => [key, shapeOf(child)]),
  );
  if (node['x-kubernetes-preserve-unknown-fields'] === true) return fields;
  return Object.values(fields).every((field) => field === true) ? true : fields;
}

function specSchema(kind: string): SchemaNode {
  const crd = crds.find((c) => c.spec.names.kind === kind);
  return crd!.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
}

const kinds: MonitoringKind[] = ['Prometheus', 'ServiceMonitor', 'PodMonitor', 'PrometheusRule'];

describe('the supported fields', () => {
  test.each(kinds)(
    'of %s are exactly the fields its schema types where it keeps unknown ones',
    (kind) => {
      expect(SUPPORTED_FIELDS[kind]).toEqual(shapeOf(specSchema(kind)));
    },
  );
});

describe('Prometheus', () => {
  test("names a field upstream has and the operator does not act on: upstream's getting-started enableAdminAPI: true", () => {
    const spec = {
      serviceAccountName: 'prometheus',
      serviceMonitorSelector: { matchLabels: { team: 'frontend' } },
      resources: { requests: { memory: '400Mi' } },
      enableAdminAPI: true,
    };
    expect(ignoredFields('Prometheus', spec)).toEqual(['spec.enableAdminAPI']);
  });

  test('does not name enableAdminAPI: false, the default this operator keeps too', () => {
    expect(
      ignoredFields('Prometheus', { serviceAccountName: 'prometheus', enableAdminAPI: false }),
    ).toEqual([]);
  });

  test('names nothing in a spec of supported fields only', () => {
    const spec = {
      replicas: 2,
      version: 'v2.45.0',
      image: 'quay.io/prometheus/prometheus:v2.45.0',
      serviceMonitorSelector: {},
      serviceMonitorNamespaceSelector: { matchExpressions: [{ key: 'team', operator: 'Exists' }] },
      podMonitorSelector: null,
      podMonitorNamespaceSelector: {},
      ruleSelector: { matchLabels: { role: 'alerts' } },
      ruleNamespaceSelector: {},
      overrideHonorLabels: true,
      overrideHonorTimestamps: true,
      serviceDiscoveryRole: 'EndpointSlice',
      scrapeInterval: '15s',
      scrapeTimeout: '10s',
      evaluationInterval: '30s',
      externalLabels: { cluster: 'eu-1' },
      retention: '7d',
      paused: false,
      serviceAccountName: 'prometheus',
      resources: { limits: { cpu: '1' } },
    };
    expect(ignoredFields('Prometheus', spec)).toEqual([]);
  });

  test('names every ignored field, in the order written', () => {
    expect(
      ignoredFields('Prometheus', {
        replicas: 1,
        alerting: { alertmanagers: [] },
        storage: { volumeClaimTemplate: {} },
        probeSelector: {},
      }),
    ).toEqual(['spec.alerting', 'spec.storage', 'spec.probeSelector']);
  });

  test("does not name fields that are unset in upstream's sense: null, empty string, empty list", () => {
    expect(
      ignoredFields('Prometheus', { tolerations: [], priorityClassName: '', alerting: null }),
    ).toEqual([]);
  });
});

describe('ServiceMonitor', () => {
  test('names ignored endpoint fields with the endpoint index', () => {
    const spec = {
      selector: { matchLabels: { app: 'web' } },
      endpoints: [
        { port: 'web', honorTimestamps: false },
        {
          port: 'admin',
          tlsConfig: { insecureSkipVerify: true },
          bearerTokenFile: '/var/run/token',
        },
      ],
    };
    expect(ignoredFields('ServiceMonitor', spec)).toEqual([
      'spec.endpoints[1].tlsConfig',
      'spec.endpoints[1].bearerTokenFile',
    ]);
  });

  test('names ignored top-level fields', () => {
    expect(
      ignoredFields('ServiceMonitor', {
        selector: {},
        endpoints: [{ port: 'web' }],
        sampleLimit: 1000,
        attachMetadata: { node: true },
      }),
    ).toEqual(['spec.sampleLimit', 'spec.attachMetadata']);
  });

  test('names nothing in a spec of supported fields only', () => {
    const spec = {
      selector: { matchLabels: { app: 'web' } },
      namespaceSelector: { any: true },
      jobLabel: 'app',
      targetLabels: ['team'],
      podTargetLabels: ['version'],
      selectorMechanism: 'RoleSelector',
      serviceDiscoveryRole: 'EndpointSlice',
      endpoints: [
        {
          port: 'web',
          targetPort: 8080,
          path: '/metrics',
          scheme: 'http',
          interval: '30s',
          scrapeTimeout: '10s',
          honorLabels: true,
          honorTimestamps: false,
          filterRunning: false,
          relabelings: [
            { sourceLabels: ['__meta_kubernetes_pod_name'], targetLabel: 'pod', action: 'replace' },
          ],
          metricRelabelings: [{ regex: 'go_.*', action: 'drop' }],
        },
      ],
    };
    expect(ignoredFields('ServiceMonitor', spec)).toEqual([]);
  });
});

describe('PodMonitor', () => {
  test('names ignored endpoint and top-level fields', () => {
    const spec = {
      selector: {},
      podMetricsEndpoints: [{ port: 'metrics', basicAuth: { username: { name: 's', key: 'u' } } }],
      targetLimit: 10,
    };
    expect(ignoredFields('PodMonitor', spec)).toEqual([
      'spec.podMetricsEndpoints[0].basicAuth',
      'spec.targetLimit',
    ]);
  });

  test('names nothing in a spec of supported fields only', () => {
    const spec = {
      selector: { matchLabels: { app: 'worker' } },
      namespaceSelector: { matchNames: ['jobs'] },
      jobLabel: 'app',
      podTargetLabels: ['team'],
      selectorMechanism: 'RelabelConfig',
      podMetricsEndpoints: [
        {
          port: 'metrics',
          portNumber: 9100,
          path: '/m',
          scheme: 'https',
          params: { module: ['x'] },
          interval: '1m',
          scrapeTimeout: '5s',
          honorLabels: false,
          honorTimestamps: true,
          filterRunning: false,
        },
      ],
    };
    expect(ignoredFields('PodMonitor', spec)).toEqual([]);
  });
});

describe('PrometheusRule', () => {
  test('names ignored group and rule fields with their indices', () => {
    const spec = {
      groups: [
        { name: 'a', rules: [{ record: 'r', expr: 'up' }] },
        {
          name: 'b',
          partial_response_strategy: 'warn',
          rules: [{ alert: 'Down', expr: 'up == 0', severity: 'page' }],
        },
      ],
    };
    expect(ignoredFields('PrometheusRule', spec)).toEqual([
      'spec.groups[1].partial_response_strategy',
      'spec.groups[1].rules[0].severity',
    ]);
  });

  test('names nothing in a spec of supported fields only', () => {
    const spec = {
      groups: [
        {
          name: 'node',
          interval: '1m',
          labels: { team: 'infra' },
          limit: 10,
          rules: [
            {
              alert: 'NodeDown',
              expr: 'up == 0',
              for: '5m',
              keep_firing_for: '10m',
              labels: { severity: 'page' },
              annotations: { summary: 'down' },
            },
          ],
        },
      ],
    };
    expect(ignoredFields('PrometheusRule', spec)).toEqual([]);
  });
});

describe('hostile input', () => {
  test('a spec that is not an object names nothing', () => {
    for (const spec of [undefined, null, 'spec', 7, [{ enableAdminAPI: true }]])
      expect(ignoredFields('Prometheus', spec)).toEqual([]);
  });

  test('keys that are not plain names are quoted and clipped, and __proto__ is just another ignored field', () => {
    const spec = JSON.parse(
      `{"__proto__": {"replicas": 1}, "a.b": 1, "line\\nbreak": 2, "${'k'.repeat(100)}": 3}`,
    ) as unknown;
    expect(ignoredFields('Prometheus', spec)).toEqual([
      'spec.__proto__',
      'spec["a.b"]',
      'spec["line\\nbreak"]',
      `spec["${'k'.repeat(40)}..."]`,
    ]);
  });

  test('a list item of the wrong type names nothing below it', () => {
    expect(
      ignoredFields('ServiceMonitor', {
        selector: {},
        endpoints: ['web', 7, null, { port: 'web', tlsConfig: {} }],
      }),
    ).toEqual(['spec.endpoints[3].tlsConfig']);
  });
});

describe('the Event message', () => {
  test('names the kind, the generation, every field, and what to do', () => {
    const message = ignoredFieldsMessage(
      'ServiceMonitor',
      ['spec.endpoints[0].tlsConfig', 'spec.sampleLimit'],
      3,
    );
    expect(message).toBe(
      'this ServiceMonitor (generation 3) sets 2 fields that Konductor keeps but does not act on: spec.endpoints[0].tlsConfig, spec.sampleLimit. ' +
        'They have no effect here; remove them, or use prometheus-operator if you need them (docs/upstream-compatibility.md lists what is supported).',
    );
  });

  test('counts what does not fit, so a spec with thousands of ignored fields still gets a whole message within an Event', () => {
    const paths = Array.from({ length: 5000 }, (_, i) => `spec.field${i}`);
    const message = ignoredFieldsMessage('Prometheus', paths, 1);
    expect(message.length).toBeLessThan(1024);
    expect(message).toMatch(
      /sets 5000 fields .*spec\.field0, spec\.field1, .* and \d+ more\. They have no effect here/,
    );
  });
});
