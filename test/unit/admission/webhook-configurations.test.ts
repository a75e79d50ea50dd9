import { holds } from '../../../src/framework/admission/configuration-writer.js';
import {
  conversionWebhook,
  webhookConfigurations,
  webhookName,
  type WebhookEntry,
} from '../../../src/framework/admission/webhook-configurations.js';
import { NAMESPACES } from '../../../src/framework/api/resource.js';

const monitors = {
  group: 'monitoring.coreos.com',
  version: 'v1',
  plural: 'servicemonitors',
  kind: 'ServiceMonitor',
  namespaced: true,
  hasStatus: false,
};

function entry(overrides: Partial<WebhookEntry> = {}): WebhookEntry {
  return {
    kind: 'validate',
    id: 'PrometheusAdmission.serviceMonitor',
    path: '/validate/PrometheusAdmission.serviceMonitor',
    resource: monitors,
    ...overrides,
  };
}

type Webhook = Record<string, unknown> & {
  clientConfig: Record<string, unknown>;
  rules: Array<Record<string, unknown>>;
  namespaceSelector: Record<string, unknown>;
};
function webhooksOf(object: unknown): Webhook[] {
  return (object as { webhooks: Webhook[] }).webhooks;
}

describe('webhook configurations built from the handlers', () => {
  test('one validating webhook per handler: its rule, Fail and 10 s by default, sideEffects None for dry runs', () => {
    const { validating, mutating } = webhookConfigurations({
      name: 'konductor.dev',
      entries: [entry()],
      client: { url: 'https://127.0.0.1:9443' },
      caBundle: 'CA',
    });
    expect(mutating).toBeUndefined();
    expect(validating?.metadata).toEqual({
      name: 'konductor.dev',
      labels: { 'app.kubernetes.io/managed-by': 'konductor.dev' },
    });
    expect(webhooksOf(validating)).toEqual([
      expect.objectContaining({
        name: expect.stringMatching(
          /^prometheusadmission-servicemonitor-[0-9a-f]{8}\.konductor\.dev$/,
        ),
        clientConfig: {
          url: 'https://127.0.0.1:9443/validate/PrometheusAdmission.serviceMonitor',
          caBundle: Buffer.from('CA').toString('base64'),
        },
        rules: [
          {
            apiGroups: ['monitoring.coreos.com'],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['servicemonitors'],
            scope: 'Namespaced',
          },
        ],
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Fail',
        timeoutSeconds: 10,
      }),
    ]);
  });

  test('an operator serving some namespaces only admits objects there', () => {
    const { validating } = webhookConfigurations({
      name: 'op.example.com',
      entries: [entry()],
      client: { url: 'https://h' },
      caBundle: 'CA',
      namespaces: ['team-b', 'team-a'],
    });
    expect(webhooksOf(validating)[0]!.namespaceSelector).toEqual({
      matchExpressions: [
        { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a', 'team-b'] },
      ],
    });
  });

  test("the handler's own selectors, policy, timeout, operations and subresource are kept", () => {
    const { mutating } = webhookConfigurations({
      name: 'konductor.dev',
      entries: [
        entry({
          kind: 'mutate',
          failurePolicy: 'Ignore',
          timeoutSeconds: 3,
          operations: ['UPDATE'],
          subresource: 'status',
          objectSelector: { matchLabels: { a: 'b' } },
        }),
      ],
      client: { service: { namespace: 'ops', name: 'op-webhooks', port: 443 } },
      caBundle: 'CA',
    });
    const [hook] = webhooksOf(mutating);
    expect(hook).toMatchObject({
      failurePolicy: 'Ignore',
      timeoutSeconds: 3,
      objectSelector: { matchLabels: { a: 'b' } },
      reinvocationPolicy: 'Never',
    });
    expect(hook!.rules[0]).toMatchObject({
      operations: ['UPDATE'],
      resources: ['servicemonitors/status'],
    });
    expect(hook!.clientConfig).toMatchObject({
      service: {
        namespace: 'ops',
        name: 'op-webhooks',
        port: 443,
        path: '/validate/PrometheusAdmission.serviceMonitor',
      },
    });
  });

  test('a cluster-scoped resource gets no namespace selector, which would match none of its objects', () => {
    const { validating } = webhookConfigurations({
      name: 'konductor.dev',
      entries: [entry({ resource: NAMESPACES })],
      client: { url: 'https://h' },
      caBundle: 'CA',
      namespaces: ['a'],
    });
    expect(webhooksOf(validating)[0]).toMatchObject({
      namespaceSelector: {},
      rules: [expect.objectContaining({ scope: 'Cluster' })],
    });
  });

  test('webhook names are DNS subdomains of at least three segments, whatever the handler id', () => {
    expect(webhookName('My_Handlers.check!', 'konductor.dev')).toMatch(
      /^my-handlers-check-[0-9a-f]{8}\.konductor\.dev$/,
    );
    expect(webhookName('x', 'single')).toBe('x.single.webhooks');
  });

  test('an id that is already a DNS label is the name as it is', () => {
    expect(webhookName('widget-limits', 'konductor.dev')).toBe('widget-limits.konductor.dev');
  });

  test.each([
    ['an underscore and a dash', 'widget_limits', 'widget-limits'],
    ['a dot and a dash', 'Widgets.check', 'Widgets-check'],
    ['case', 'Widgets.check', 'widgets.check'],
    ['characters past the 63rd', `${'a'.repeat(63)}-one`, `${'a'.repeat(63)}-two`],
  ])('ids differing only in %s get different names', (_what, one, other) => {
    expect(webhookName(one, 'konductor.dev')).not.toBe(webhookName(other, 'konductor.dev'));
  });

  test('a long id is cut to one DNS label, with its hash', () => {
    const label = webhookName('x'.repeat(100), 'konductor.dev').split('.')[0]!;
    expect(label).toMatch(/^x+-[0-9a-f]{8}$/);
    expect(label.length).toBeLessThanOrEqual(63);
  });

  test('the same id always gets the same name, so a restart rewrites nothing', () => {
    expect(webhookName('Widgets.check', 'konductor.dev')).toBe(
      webhookName('Widgets.check', 'konductor.dev'),
    );
  });

  test('a CRD conversion points at the conversion path with the CA', () => {
    expect(conversionWebhook({ url: 'https://h:1' }, '/convert/g/p', 'CA')).toEqual({
      strategy: 'Webhook',
      webhook: {
        clientConfig: {
          url: 'https://h:1/convert/g/p',
          caBundle: Buffer.from('CA').toString('base64'),
        },
        conversionReviewVersions: ['v1'],
      },
    });
  });
});

describe('whether a stored configuration already holds the wanted one', () => {
  test('defaults the API server adds do not count as a difference', () => {
    expect(
      holds(
        { a: 1, b: { c: 2, d: 3 }, list: [{ x: 1, y: 2 }] },
        { a: 1, b: { c: 2 }, list: [{ x: 1 }] },
      ),
    ).toBe(true);
  });

  test('a changed value, a missing key or a list of another length does', () => {
    expect(holds({ a: 1 }, { a: 2 })).toBe(false);
    expect(holds({}, { a: 1 })).toBe(false);
    expect(holds({ list: [1, 2] }, { list: [1] })).toBe(false);
  });
});
