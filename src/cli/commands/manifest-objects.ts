// The objects `konductor manifests` prints: ServiceAccount, RBAC from derived rules, and a
// Deployment hardened like deploy/30-deployment.yaml. Pure: the command renders them as YAML.
import { dump } from 'js-yaml';
import { nodeOptionsForLimit } from '../heap-size.js';
import type { RbacRules, WatchedResource } from './rbac-rules.js';
import {
  WEBHOOK_PORT,
  webhookDocuments,
  webhookServiceName,
  type WebhookInstall,
} from './webhook-manifests.js';

/** The operator container's memory limit: 100,000 small objects fit (docs/running/sizing.md). */
const MEMORY_LIMIT_MIB = 384;

/** What the install looks like. */
export interface InstallOptions {
  /** Name of the ServiceAccount, Roles, bindings and Deployment (and of ClusterRoles, which are cluster-wide). */
  name: string;
  /** The operator's own namespace: ServiceAccount, Deployment and Lease. */
  namespace: string;
  /** Also print the Namespace object. */
  createNamespace: boolean;
  image: string;
  /** The handler files or folders as `konductor run` finds them inside the image. */
  runPaths: readonly string[];
  /** Namespaces served with Roles; undefined: all namespaces, with ClusterRoles. */
  watchNamespaces: readonly string[] | undefined;
  leaseName: string;
  /** The operator's identity (`--identity`); undefined: konductor run's default. */
  identity?: string;
  /** Where the operator keeps its bookkeeping (`--storage`); undefined: konductor run's default (annotations). */
  storage?: 'annotations' | 'status';
  /** The webhooks the handlers declare; undefined when they declare none. */
  webhooks?: WebhookInstall;
  /** Replicas share the objects out (`--sharding`, 3 replicas). */
  sharding?: boolean;
}

/** One YAML document: comment lines to print above it, and the object. */
export interface ManifestDocument {
  comments: string[];
  object: Record<string, unknown>;
}

const RBAC_API = 'rbac.authorization.k8s.io/v1';

/** The documents of an install, in the order `kubectl apply -f` needs them (namespace first). */
export function manifestDocuments(rbac: RbacRules, options: InstallOptions): ManifestDocument[] {
  const { name, namespace } = options;
  const labels = { 'app.kubernetes.io/name': name };
  const meta = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    name,
    ...extra,
    labels,
  });
  const subjects = [{ kind: 'ServiceAccount', name, namespace }];
  const documents: ManifestDocument[] = [];

  if (options.createNamespace) {
    documents.push({
      comments: [],
      object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels } },
    });
  }
  documents.push({
    comments: ['The identity the operator runs as.'],
    object: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta({ namespace }) },
  });

  const explanation = explainRules(rbac);
  // On SIGTERM the operator reads whether a namespace (its own, or an object's) is being deleted, to
  // release finalizers no instance will come back for instead of leaving the namespace stuck.
  const namespaceReads = { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] };
  if (options.watchNamespaces === undefined) {
    documents.push(
      {
        comments: [
          'Least privilege, cluster-wide (the operator watches all namespaces):',
          ...explanation,
          'get namespaces: on stop, whether a namespace is being deleted (finalizers released then).',
        ],
        object: {
          apiVersion: RBAC_API,
          kind: 'ClusterRole',
          metadata: meta(),
          rules: [...rbac.rules, namespaceReads],
        },
      },
      {
        comments: [],
        object: {
          apiVersion: RBAC_API,
          kind: 'ClusterRoleBinding',
          metadata: meta(),
          roleRef: roleRef('ClusterRole', name),
          subjects,
        },
      },
    );
  } else {
    for (const served of options.watchNamespaces) {
      documents.push(
        {
          comments: [`Least privilege in namespace ${served} only:`, ...explanation],
          object: {
            apiVersion: RBAC_API,
            kind: 'Role',
            metadata: meta({ namespace: served }),
            rules: rbac.rules,
          },
        },
        {
          comments: [],
          object: {
            apiVersion: RBAC_API,
            kind: 'RoleBinding',
            metadata: meta({ namespace: served }),
            roleRef: roleRef('Role', name),
            subjects,
          },
        },
      );
    }
    // Nothing cluster-wide here, so a namespace admin can install it: without get on namespaces the operator
    // logs once on stop that it cannot tell whether a namespace is being deleted, and keeps every finalizer.
  }

  if (options.webhooks)
    documents.push(...webhookDocuments({ name, namespace, labels }, options.webhooks));
  const leaseRole = `${name}-leader-election`;
  documents.push(
    {
      comments: options.sharding
        ? [
            `Leader election and sharding: the leader Lease '${options.leaseName}' and one member Lease per replica start, named then;`,
            'the coordinating replica names heirs on departed members’ Leases and removes them: every Lease of this namespace.',
          ]
        : [
            `Leader election: create a Lease, then read and renew only '${options.leaseName}', in the operator's namespace.`,
            'RBAC cannot limit create by name (the name is not known before the object exists).',
          ],
      object: {
        apiVersion: RBAC_API,
        kind: 'Role',
        metadata: { name: leaseRole, namespace, labels },
        rules: rbac.leaseRules,
      },
    },
    {
      comments: [],
      object: {
        apiVersion: RBAC_API,
        kind: 'RoleBinding',
        metadata: { name: leaseRole, namespace, labels },
        roleRef: roleRef('Role', leaseRole),
        subjects,
      },
    },
  );
  documents.push({
    comments: [
      "Hardened like konductor's own deploy/30-deployment.yaml: non-root, read-only root filesystem, no capabilities.",
      'Handler attempts past 10 minutes are aborted and retried (--handler-timeout 600), so one object cannot hold a',
      'worker slot forever; /healthz fails only when no run finished for 15 minutes while work waits (--stall-timeout 900).',
    ],
    object: deployment(options, labels),
  });
  return documents;
}

function roleRef(kind: 'Role' | 'ClusterRole', name: string): Record<string, string> {
  return { apiGroup: 'rbac.authorization.k8s.io', kind, name };
}

/** One comment line per watched resource (which verbs and why), plus a note for guessed names. */
function explainRules(rbac: RbacRules): string[] {
  const lines = rbac.resources.map(
    (r) =>
      `  ${r.group || 'core'}/${r.plural} (${r.writtenAs.map((n) => `'${n}'`).join(', ')}): ${purpose(r)}`,
  );
  lines.push('  core/events: create, for the Events the framework posts about handled objects.');
  const guessed = rbac.resources.filter((r) => r.source === 'guessed');
  if (guessed.length > 0) {
    lines.push(
      `Guessed plural(s) ${guessed.map((r) => `'${r.plural}'`).join(', ')} (no cluster to ask): check them against the CRD, or pass --crd <file>.`,
    );
  }
  return lines;
}

function purpose(resource: WatchedResource): string {
  if (!resource.writes) return 'list, watch (only @on.event handlers).';
  const status =
    resource.hasStatus === false
      ? 'no status subresource'
      : resource.hasStatus === undefined
        ? 'patch on /status in case the CRD has a status subresource (unknown offline; harmless if not)'
        : 'patch on /status';
  return `get, list, watch, patch (finalizer, progress annotations, handler patches); ${status}.`;
}

function deployment(
  options: InstallOptions,
  labels: Record<string, string>,
): Record<string, unknown> {
  const scope =
    options.watchNamespaces === undefined
      ? ['--all-namespaces']
      : options.watchNamespaces.flatMap((ns) => ['--namespace', ns]);
  const webhooks = options.webhooks
    ? ['--webhook-service', `${options.namespace}/${webhookServiceName(options.name)}`]
    : [];
  const fromField = (fieldPath: string): Record<string, unknown> => ({
    valueFrom: { fieldRef: { fieldPath } },
  });
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: options.name, namespace: options.namespace, labels },
    spec: {
      replicas: options.sharding ? 3 : 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: options.name,
          terminationGracePeriodSeconds: 40,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 10001,
            runAsGroup: 10001,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'operator',
              image: options.image,
              imagePullPolicy: 'IfNotPresent',
              args: [
                'run',
                ...options.runPaths,
                ...scope,
                ...(options.identity ? ['--identity', options.identity] : []),
                ...(options.storage ? ['--storage', options.storage] : []),
                '--lease-name',
                options.leaseName,
                ...(options.sharding ? ['--sharding'] : []),
                ...webhooks,
                '--log-format',
                'json',
                '--handler-timeout',
                '600',
                '--stall-timeout',
                '900',
              ],
              env: [
                // The heap sized by konductor run's rule for the memory limit below (node's own guess is a quarter).
                { name: 'NODE_OPTIONS', value: nodeOptionsForLimit(MEMORY_LIMIT_MIB * 2 ** 20) },
                { name: 'KONDUCTOR_LEASE_NAMESPACE', ...fromField('metadata.namespace') },
                { name: 'POD_NAME', ...fromField('metadata.name') },
                { name: 'POD_NAMESPACE', ...fromField('metadata.namespace') },
              ],
              ports: [
                { name: 'health', containerPort: 8080 },
                ...(options.webhooks ? [{ name: 'webhooks', containerPort: WEBHOOK_PORT }] : []),
              ],
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
              livenessProbe: {
                httpGet: { path: '/healthz', port: 'health' },
                initialDelaySeconds: 10,
                periodSeconds: 20,
                failureThreshold: 3,
              },
              readinessProbe: { httpGet: { path: '/readyz', port: 'health' }, periodSeconds: 5 },
              resources: {
                requests: { cpu: '50m', memory: '128Mi' },
                limits: { memory: `${MEMORY_LIMIT_MIB}Mi` },
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
            },
          ],
          // The root filesystem is read-only; tsx (TypeScript handler files) and handlers write to /tmp.
          volumes: [{ name: 'tmp', emptyDir: {} }],
        },
      },
    },
  };
}

/** The documents as one multi-document YAML stream, comments above each object. */
export function renderManifests(documents: readonly ManifestDocument[]): string {
  return documents
    .map(({ comments, object }) => {
      const header = comments.map((line) => `# ${line}`.trimEnd()).join('\n');
      const body = dump(object, { noRefs: true, lineWidth: -1, sortKeys: false });
      return header === '' ? body : `${header}\n${body}`;
    })
    .join('---\n');
}
