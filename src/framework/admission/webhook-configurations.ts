import type { Resource } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import { shortHash } from '../objects/short-hash.js';

/** A label selector as Kubernetes writes it. */
export interface WebhookLabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }>;
}

/** One admission handler as its webhook entry needs it. */
export interface WebhookEntry {
  kind: 'validate' | 'mutate';
  /** The handler id: it names the webhook. */
  id: string;
  /** The server path that answers it (`/validate/<id>`). */
  path: string;
  /** The resolved resource it admits. */
  resource: Resource;
  operations?: readonly string[];
  subresource?: string;
  failurePolicy?: 'Fail' | 'Ignore';
  timeoutSeconds?: number;
  namespaceSelector?: WebhookLabelSelector;
  objectSelector?: WebhookLabelSelector;
}

/** How the API server reaches the webhook server: a Service in the cluster, or a URL (local development, tests). */
export type WebhookClient =
  { url: string } | { service: { namespace: string; name: string; port: number } };

/** What the configurations are built from. */
export interface WebhookConfigurationInput {
  /** The configurations' name: the operator identity. */
  name: string;
  entries: readonly WebhookEntry[];
  client: WebhookClient;
  /** PEM of the CA(s) that signed the serving certificate. */
  caBundle: string;
  /**
   * The namespaces the operator serves (none: all). Each webhook then matches only these, so an
   * operator limited to some namespaces never admits, or blocks when it is down, anyone else's objects.
   */
  namespaces?: readonly string[];
  /** Labels every configuration carries, so `konductor uninstall` and people can find them. */
  labels?: Record<string, string>;
}

/** The label key naming the operator identity that manages a configuration. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
const DEFAULT_OPERATIONS = ['CREATE', 'UPDATE'];

/** Longest DNS label: the handler id's part of a webhook name. */
const MAX_LABEL = 63;

/**
 * The webhook's name: a DNS subdomain of at least three segments (the API server's rule), from the
 * handler id and the identity: `prometheusoperator-validate-1a2b3c4d.konductor.dev`. When the id had
 * to be lowercased, cleaned or cut, a hash of the whole id follows, so ids differing only in case,
 * punctuation or past 63 characters never share a name (the API server refuses duplicates).
 */
export function webhookName(id: string, identity: string): string {
  const cleaned = id
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const label = cleaned === id && cleaned.length <= MAX_LABEL ? cleaned : hashed(cleaned, id);
  const name = `${label}.${identity}`;
  return name.split('.').length >= 3 ? name : `${name}.webhooks`;
}

/** `cleaned` cut to leave room for `-<hash of raw>` within one DNS label. */
function hashed(cleaned: string, raw: string): string {
  const digest = shortHash(raw);
  const head = cleaned.slice(0, MAX_LABEL - digest.length - 1).replace(/-+$/, '');
  return head ? `${head}-${digest}` : digest;
}

/** The webhook's client config: the URL joined with the path, or the Service with the path. */
function clientConfig(
  client: WebhookClient,
  path: string,
  caBundle: string,
): Record<string, unknown> {
  const bundle = Buffer.from(caBundle, 'utf8').toString('base64');
  if ('url' in client) return { url: `${client.url.replace(/\/+$/, '')}${path}`, caBundle: bundle };
  return { service: { ...client.service, path }, caBundle: bundle };
}

/** The user's namespace selector, narrowed to the operator's namespaces when it serves only some. */
function namespaceSelector(
  user: WebhookLabelSelector | undefined,
  namespaces: readonly string[] | undefined,
): WebhookLabelSelector {
  const expressions = [...(user?.matchExpressions ?? [])];
  if (namespaces && namespaces.length > 0)
    expressions.push({ key: NAMESPACE_NAME_LABEL, operator: 'In', values: [...namespaces].sort() });
  return {
    ...(user?.matchLabels ? { matchLabels: user.matchLabels } : {}),
    ...(expressions.length > 0 ? { matchExpressions: expressions } : {}),
  };
}

function webhook(entry: WebhookEntry, input: WebhookConfigurationInput): Record<string, unknown> {
  const { resource } = entry;
  const plural = entry.subresource ? `${resource.plural}/${entry.subresource}` : resource.plural;
  return {
    name: webhookName(entry.id, input.name),
    clientConfig: clientConfig(input.client, entry.path, input.caBundle),
    rules: [
      {
        apiGroups: [resource.group],
        apiVersions: [resource.version],
        operations: [...(entry.operations ?? DEFAULT_OPERATIONS)],
        resources: [plural],
        scope: resource.namespaced ? 'Namespaced' : 'Cluster',
      },
    ],
    admissionReviewVersions: ['v1'],
    // Required for `kubectl --dry-run=server` to reach the handler; handlers get `dryRun` to honour it.
    sideEffects: 'None',
    failurePolicy: entry.failurePolicy ?? 'Fail',
    matchPolicy: 'Equivalent',
    timeoutSeconds: entry.timeoutSeconds ?? 10,
    // Cluster-scoped objects have no namespace: a namespace selector would match none of them.
    namespaceSelector: resource.namespaced
      ? namespaceSelector(entry.namespaceSelector, input.namespaces)
      : {},
    objectSelector: entry.objectSelector ?? {},
    ...(entry.kind === 'mutate' ? { reinvocationPolicy: 'Never' } : {}),
  };
}

/**
 * The ValidatingWebhookConfiguration and MutatingWebhookConfiguration for the declared handlers, one
 * webhook per handler (so `failurePolicy` and the timeout are per handler). A kind with no handlers
 * is `undefined`: the writer deletes a configuration left from an earlier version of the operator.
 */
export function webhookConfigurations(input: WebhookConfigurationInput): {
  validating: KubeObject | undefined;
  mutating: KubeObject | undefined;
} {
  const build = (kind: 'validate' | 'mutate', objectKind: string): KubeObject | undefined => {
    const entries = input.entries.filter((entry) => entry.kind === kind);
    if (entries.length === 0) return undefined;
    return {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: objectKind,
      metadata: { name: input.name, labels: { ...input.labels, [MANAGED_BY_LABEL]: input.name } },
      webhooks: entries.map((entry) => webhook(entry, input)),
    } as KubeObject;
  };
  return {
    validating: build('validate', 'ValidatingWebhookConfiguration'),
    mutating: build('mutate', 'MutatingWebhookConfiguration'),
  };
}

/** The `spec.conversion` of a CRD whose versions are converted by the operator's webhook. */
export function conversionWebhook(
  client: WebhookClient,
  path: string,
  caBundle: string,
): Record<string, unknown> {
  return {
    strategy: 'Webhook',
    webhook: {
      clientConfig: clientConfig(client, path, caBundle),
      conversionReviewVersions: ['v1'],
    },
  };
}
