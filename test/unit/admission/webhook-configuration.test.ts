import { crdConversion, webhookConfigurations, webhookName } from '../../../src/framework/admission/webhook-configuration.js';
import type { AdmissionOptions, AdmissionSpec } from '../../../src/framework/index.js';

const spec = (kind: AdmissionSpec['kind'], id: string, options: AdmissionOptions = {}): AdmissionSpec => ({
  kind,
  id,
  resource: { apiVersion: 'example.com/v1', name: 'Widget' },
  options,
  fn: () => undefined,
});
const widgets = { group: 'example.com', version: 'v1', plural: 'widgets', kind: 'Widget', namespaced: true, hasStatus: true };
const base = { name: 'widgets-operator', caBundle: '-----BEGIN CERTIFICATE-----\n', resolve: () => widgets };

describe('webhook configurations from the admission handlers', () => {
  test('each handler is one webhook at its own path, with its rules, policy, timeout and selectors', () => {
    const { validating, mutating } = webhookConfigurations(
      [spec('validate', 'Widgets.check', { operations: ['CREATE'], failurePolicy: 'Ignore', timeoutSeconds: 3, objectSelector: { matchLabels: { team: 'a' } } })],
      { ...base, endpoint: { service: { namespace: 'ops', name: 'widgets-webhook', port: 443 } } },
    );
    expect(mutating).toBeUndefined();
    expect(validating).toEqual({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'widgets-operator' },
      webhooks: [
        {
          name: webhookName('Widgets.check', 'widgets-operator'),
          clientConfig: { service: { namespace: 'ops', name: 'widgets-webhook', port: 443, path: '/validate/Widgets.check' }, caBundle: Buffer.from(base.caBundle).toString('base64') },
          rules: [{ apiGroups: ['example.com'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'], scope: 'Namespaced' }],
          failurePolicy: 'Ignore',
          timeoutSeconds: 3,
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          matchPolicy: 'Equivalent',
          objectSelector: { matchLabels: { team: 'a' } },
        },
      ],
    });
  });

  test('defaults: CREATE and UPDATE, Fail, 10 s; a subresource handler matches plural/subresource; a URL endpoint gets the path appended', () => {
    const { mutating } = webhookConfigurations([spec('mutate', 'Widgets.status', { subresource: 'status' })], { ...base, endpoint: { url: 'https://127.0.0.1:9443/' } });
    const [webhook] = mutating!.webhooks as Record<string, unknown>[];
    expect(webhook).toMatchObject({
      clientConfig: { url: 'https://127.0.0.1:9443/mutate/Widgets.status' },
      rules: [{ operations: ['CREATE', 'UPDATE'], resources: ['widgets/status'] }],
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
    });
  });

  test('webhook names are DNS names of three labels or more, distinct for ids that differ only in punctuation', () => {
    const one = webhookName('Widgets.check', 'Widgets Operator');
    const other = webhookName('widgets-check', 'Widgets Operator');
    for (const name of [one, other]) expect(name).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?){2,}$/);
    expect(one).not.toBe(other);
  });

  test('a CRD conversion points at the conversion path of its group and plural', () => {
    expect(crdConversion({ group: 'example.com', name: 'widgets' }, { caBundle: 'ca', endpoint: { url: 'https://10.0.0.1:9443' } })).toEqual({
      strategy: 'Webhook',
      webhook: { clientConfig: { url: 'https://10.0.0.1:9443/convert/example.com/widgets', caBundle: Buffer.from('ca').toString('base64') }, conversionReviewVersions: ['v1'] },
    });
  });
});
