import { createHash } from 'node:crypto';
import { splitApiVersion, type Resource } from '../api/resource.js';
import { ADMISSION_DEFAULTS, type AdmissionSpec, type ConversionSpec } from '../handler/admission-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import { conversionPath, webhookPath } from './webhook-paths.js';

/**
 * Where the API server reaches the webhook server: a Service in the cluster, or a base URL (local
 * development, tests: `https://127.0.0.1:9443`). Each webhook's path is added to it.
 */
export type WebhookEndpoint = { service: { namespace: string; name: string; port?: number } } | { url: string };

/** What the webhook configurations are made from besides the handlers. */
export interface WebhookConfigurationOptions {
  /** The configurations' name (one Validating, one Mutating), e.g. from the operator's identity. */
  name: string;
  /** The CA certificates (PEM) the API server trusts the serving certificate through. */
  caBundle: string;
  endpoint: WebhookEndpoint;
  /** The discovered resource of a handler's `apiVersion` and name; unresolved names are used as the plural. */
  resolve: (apiVersion: string, name: string) => Resource | undefined;
}

function clientConfig(endpoint: WebhookEndpoint, path: string, caBundle: string): Record<string, unknown> {
  const ca = Buffer.from(caBundle).toString('base64');
  if ('url' in endpoint) return { url: `${endpoint.url.replace(/\/+$/, '')}${path}`, caBundle: ca };
  const { namespace, name, port } = endpoint.service;
  return { service: port === undefined ? { namespace, name, path } : { namespace, name, port, path }, caBundle: ca };
}

/**
 * A webhook name the API server accepts (a DNS subdomain of at least three labels), unique per handler
 * id: the id made DNS-safe, a short hash of the id (two ids can make the same safe text), then the
 * configuration's name.
 */
export function webhookName(id: string, configuration: string): string {
  const safe = id.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'handler';
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 8);
  const suffix =
    configuration.toLowerCase().replace(/[^a-z0-9.-]+/g, '-').replace(/\.{2,}/g, '.').slice(0, 150).replace(/^[-.]+|[-.]+$/g, '') || 'operator';
  return `${safe}-${hash}.${suffix}.konductor.dev`;
}

/** One webhook entry: the handler's rules, policy, timeout and selectors, pointing at its own path. */
function webhookEntry(spec: AdmissionSpec, options: WebhookConfigurationOptions): Record<string, unknown> {
  const { group, version } = splitApiVersion(spec.resource.apiVersion);
  const resource = options.resolve(spec.resource.apiVersion, spec.resource.name);
  const plural = resource?.plural ?? spec.resource.name.toLowerCase();
  const entry: Record<string, unknown> = {
    name: webhookName(spec.id, options.name),
    clientConfig: clientConfig(options.endpoint, webhookPath(spec), options.caBundle),
    rules: [
      {
        apiGroups: [group],
        apiVersions: [version],
        operations: [...(spec.options.operations ?? ADMISSION_DEFAULTS.operations)],
        resources: [spec.options.subresource ? `${plural}/${spec.options.subresource}` : plural],
        scope: resource === undefined ? '*' : resource.namespaced ? 'Namespaced' : 'Cluster',
      },
    ],
    failurePolicy: spec.options.failurePolicy ?? ADMISSION_DEFAULTS.failurePolicy,
    timeoutSeconds: spec.options.timeoutSeconds ?? ADMISSION_DEFAULTS.timeoutSeconds,
    // Handlers must not have side effects a dry run would make real; `None` lets `--dry-run=server` call them.
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    matchPolicy: 'Equivalent',
  };
  if (spec.options.namespaceSelector) entry.namespaceSelector = spec.options.namespaceSelector;
  if (spec.options.objectSelector) entry.objectSelector = spec.options.objectSelector;
  return entry;
}

/**
 * The ValidatingWebhookConfiguration and MutatingWebhookConfiguration for the registry's admission
 * handlers, one webhook per handler (so `failurePolicy` and `timeoutSeconds` are per handler);
 * undefined where there is no handler of that kind. A pure function: create or update them as they are.
 */
export function webhookConfigurations(specs: readonly AdmissionSpec[], options: WebhookConfigurationOptions): { validating?: KubeObject; mutating?: KubeObject } {
  const make = (kind: AdmissionSpec['kind'], configurationKind: string): KubeObject | undefined => {
    const webhooks = specs.filter((spec) => spec.kind === kind).map((spec) => webhookEntry(spec, options));
    return webhooks.length === 0 ? undefined : { apiVersion: 'admissionregistration.k8s.io/v1', kind: configurationKind, metadata: { name: options.name }, webhooks };
  };
  const result: { validating?: KubeObject; mutating?: KubeObject } = {};
  const validating = make('validate', 'ValidatingWebhookConfiguration');
  const mutating = make('mutate', 'MutatingWebhookConfiguration');
  if (validating) result.validating = validating;
  if (mutating) result.mutating = mutating;
  return result;
}

/** A CRD's `spec.conversion` that sends its conversions to the handler's path (merge it into the CRD). */
export function crdConversion(spec: Pick<ConversionSpec, 'group' | 'name'>, options: Pick<WebhookConfigurationOptions, 'caBundle' | 'endpoint'>): Record<string, unknown> {
  return {
    strategy: 'Webhook',
    webhook: { clientConfig: clientConfig(options.endpoint, conversionPath(spec.group, spec.name), options.caBundle), conversionReviewVersions: ['v1'] },
  };
}
