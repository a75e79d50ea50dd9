// What `konductor manifests` adds for handlers with admission or conversion webhooks (@on.validate,
// @on.mutate, @on.convert): the Service the API server calls them through, the rights to register
// them and to keep their certificate, and what the Deployment needs to serve them. Pure.
import { certificateSecretName } from '../../framework/admission/certificate-secret.js';
import type { ManifestDocument } from './manifest-objects.js';

/** The webhooks the handlers declare, as the manifests need them. */
export interface WebhookInstall {
  /** The operator identity: the configurations' name, and the certificate Secret's (`<identity>-webhook-tls`). */
  identity: string;
  /** Whether validating or mutating handlers are declared. */
  admission: boolean;
  /** The CRDs (`<plural>.<group>`) whose versions the operator converts. */
  conversions: readonly string[];
}

/** The webhook server's container port (konductor run's default). */
export const WEBHOOK_PORT = 9443;

/** The Service the API server calls the webhooks through. */
export function webhookServiceName(name: string): string {
  return `${name}-webhooks`;
}

/** The Service, ClusterRole (+binding) to register the webhooks, and Role (+binding) for the certificate Secret. */
export function webhookDocuments(
  options: { name: string; namespace: string; labels: Record<string, string> },
  webhooks: WebhookInstall,
): ManifestDocument[] {
  const { name, namespace, labels } = options;
  const role = `${name}-webhooks`;
  const subjects = [{ kind: 'ServiceAccount', name, namespace }];
  const roleRef = (kind: string, refName: string): Record<string, string> => ({
    apiGroup: 'rbac.authorization.k8s.io',
    kind,
    name: refName,
  });
  const configurations = ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'];
  const clusterRules = [
    ...(webhooks.admission
      ? [
          {
            apiGroups: ['admissionregistration.k8s.io'],
            resources: configurations,
            verbs: ['create'],
          },
          {
            apiGroups: ['admissionregistration.k8s.io'],
            resources: configurations,
            resourceNames: [webhooks.identity],
            verbs: ['get', 'patch', 'delete'],
          },
        ]
      : []),
    ...(webhooks.conversions.length > 0
      ? [
          {
            apiGroups: ['apiextensions.k8s.io'],
            resources: ['customresourcedefinitions'],
            resourceNames: [...webhooks.conversions],
            verbs: ['get', 'patch'],
          },
        ]
      : []),
  ];
  const secret = certificateSecretName(webhooks.identity);
  return [
    {
      comments: [
        `The API server calls the webhooks at https://${webhookServiceName(name)}.${namespace}.svc:443 (the operator's port ${WEBHOOK_PORT}).`,
      ],
      object: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: webhookServiceName(name), namespace, labels },
        spec: {
          type: 'ClusterIP',
          selector: labels,
          ports: [{ name: 'webhooks', port: 443, targetPort: 'webhooks', protocol: 'TCP' }],
        },
      },
    },
    {
      comments: [
        `Registering the webhooks: the operator writes its own configurations '${webhooks.identity}'${webhooks.conversions.length > 0 ? ' and the conversion of the CRDs it converts' : ''}.`,
        'RBAC cannot limit create by name (the name is not known before the object exists).',
      ],
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: role, labels },
        rules: clusterRules,
      },
    },
    {
      comments: [],
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: role, labels },
        roleRef: roleRef('ClusterRole', role),
        subjects,
      },
    },
    {
      comments: [
        `The webhooks' CA and serving certificate, shared by replicas: Secret '${secret}' in the operator's namespace.`,
      ],
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: role, namespace, labels },
        rules: [
          { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
          {
            apiGroups: [''],
            resources: ['secrets'],
            resourceNames: [secret],
            verbs: ['get', 'patch', 'delete'],
          },
        ],
      },
    },
    {
      comments: [],
      object: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: role, namespace, labels },
        roleRef: roleRef('Role', role),
        subjects,
      },
    },
  ];
}
