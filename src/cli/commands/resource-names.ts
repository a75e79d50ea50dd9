// Offline resolution of the resource names handlers are written with (`widgets`, `Widget`, `wg`),
// for `konductor manifests`: without a cluster there is no discovery, so names are looked up in the
// CRDs the user passes, then in a table of built-in resources, and otherwise guessed (and said so).
import { splitApiVersion, type ResourceSelector } from '../../framework/api/resource.js';
import { isPlainObject } from '../../framework/objects/plain-object.js';

/** A resource's names and shape, as a CRD or the built-in table declares them. */
export interface KnownResource {
  group: string;
  /** Versions served; empty for built-ins (any version matches). */
  versions: readonly string[];
  plural: string;
  singular: string;
  kind: string;
  shortNames: readonly string[];
  namespaced: boolean;
  /** Versions with a status subresource (CRDs); for built-ins, whether the resource has one. */
  status: boolean | readonly string[];
}

/** How a handler's resource name was turned into a plural. */
export type NameSource = 'crd' | 'built-in' | 'as-written' | 'guessed';

/** A handler's resource, resolved as far as an offline tool can. */
export interface ResolvedName {
  group: string;
  plural: string;
  /** The name and apiVersion as the handler wrote them. */
  written: ResourceSelector;
  source: NameSource;
  /** Undefined when unknown (neither a CRD nor a built-in). */
  namespaced: boolean | undefined;
  /** Whether the resource has a `/status` subresource; undefined when unknown. */
  hasStatus: boolean | undefined;
}

const builtIn = (
  group: string,
  plural: string,
  kind: string,
  options: { short?: string[]; cluster?: boolean; status?: boolean } = {},
): KnownResource => ({
  group,
  versions: [],
  plural,
  singular: kind.toLowerCase(),
  kind,
  shortNames: options.short ?? [],
  namespaced: !options.cluster,
  status: options.status ?? false,
});

/** The built-in resources operators most often watch (names and scope as the API server serves them). */
export const BUILT_IN_RESOURCES: readonly KnownResource[] = [
  builtIn('', 'pods', 'Pod', { short: ['po'], status: true }),
  builtIn('', 'services', 'Service', { short: ['svc'], status: true }),
  builtIn('', 'configmaps', 'ConfigMap', { short: ['cm'] }),
  builtIn('', 'secrets', 'Secret'),
  builtIn('', 'serviceaccounts', 'ServiceAccount', { short: ['sa'] }),
  builtIn('', 'endpoints', 'Endpoints', { short: ['ep'] }),
  builtIn('', 'events', 'Event', { short: ['ev'] }),
  builtIn('', 'persistentvolumeclaims', 'PersistentVolumeClaim', { short: ['pvc'], status: true }),
  builtIn('', 'replicationcontrollers', 'ReplicationController', { short: ['rc'], status: true }),
  builtIn('', 'resourcequotas', 'ResourceQuota', { short: ['quota'], status: true }),
  builtIn('', 'limitranges', 'LimitRange', { short: ['limits'] }),
  builtIn('', 'namespaces', 'Namespace', { short: ['ns'], cluster: true, status: true }),
  builtIn('', 'nodes', 'Node', { short: ['no'], cluster: true, status: true }),
  builtIn('', 'persistentvolumes', 'PersistentVolume', {
    short: ['pv'],
    cluster: true,
    status: true,
  }),
  builtIn('apps', 'deployments', 'Deployment', { short: ['deploy'], status: true }),
  builtIn('apps', 'statefulsets', 'StatefulSet', { short: ['sts'], status: true }),
  builtIn('apps', 'daemonsets', 'DaemonSet', { short: ['ds'], status: true }),
  builtIn('apps', 'replicasets', 'ReplicaSet', { short: ['rs'], status: true }),
  builtIn('batch', 'jobs', 'Job', { status: true }),
  builtIn('batch', 'cronjobs', 'CronJob', { short: ['cj'], status: true }),
  builtIn('autoscaling', 'horizontalpodautoscalers', 'HorizontalPodAutoscaler', {
    short: ['hpa'],
    status: true,
  }),
  builtIn('policy', 'poddisruptionbudgets', 'PodDisruptionBudget', {
    short: ['pdb'],
    status: true,
  }),
  builtIn('networking.k8s.io', 'ingresses', 'Ingress', { short: ['ing'], status: true }),
  builtIn('networking.k8s.io', 'networkpolicies', 'NetworkPolicy', { short: ['netpol'] }),
  builtIn('coordination.k8s.io', 'leases', 'Lease'),
  builtIn('rbac.authorization.k8s.io', 'roles', 'Role'),
  builtIn('rbac.authorization.k8s.io', 'rolebindings', 'RoleBinding'),
  builtIn('rbac.authorization.k8s.io', 'clusterroles', 'ClusterRole', { cluster: true }),
  builtIn('rbac.authorization.k8s.io', 'clusterrolebindings', 'ClusterRoleBinding', {
    cluster: true,
  }),
  builtIn('storage.k8s.io', 'storageclasses', 'StorageClass', { short: ['sc'], cluster: true }),
  builtIn('apiextensions.k8s.io', 'customresourcedefinitions', 'CustomResourceDefinition', {
    short: ['crd', 'crds'],
    cluster: true,
    status: true,
  }),
];

/**
 * Resolves a handler's resource offline: first among `crds` (exact names, scope and status), then
 * among the built-in resources, else by rule: a lower-case name ending in `s` is taken as the
 * plural as written, anything else (a kind, a singular, a short name) is lower-cased and pluralized
 * by English rules, which is what `kubebuilder` and most CRD authors do, and is reported as guessed.
 */
export function resolveResourceName(
  selector: ResourceSelector,
  crds: readonly KnownResource[] = [],
): ResolvedName {
  const { group, version } = splitApiVersion(selector.apiVersion);
  const name = selector.name.toLowerCase();
  const names = (r: KnownResource): string[] => [
    r.plural,
    r.singular,
    r.kind.toLowerCase(),
    ...r.shortNames.map((s) => s.toLowerCase()),
  ];
  const crd = crds.find(
    (r) =>
      r.group === group &&
      (r.versions.length === 0 || r.versions.includes(version)) &&
      names(r).includes(name),
  );
  if (crd) {
    const hasStatus = typeof crd.status === 'boolean' ? crd.status : crd.status.includes(version);
    return {
      group,
      plural: crd.plural,
      written: selector,
      source: 'crd',
      namespaced: crd.namespaced,
      hasStatus,
    };
  }
  const known = BUILT_IN_RESOURCES.find((r) => r.group === group && names(r).includes(name));
  if (known)
    return {
      group,
      plural: known.plural,
      written: selector,
      source: 'built-in',
      namespaced: known.namespaced,
      hasStatus: known.status === true,
    };
  if (selector.name === name && name.endsWith('s')) {
    return {
      group,
      plural: name,
      written: selector,
      source: 'as-written',
      namespaced: undefined,
      hasStatus: undefined,
    };
  }
  return {
    group,
    plural: pluralize(name),
    written: selector,
    source: 'guessed',
    namespaced: undefined,
    hasStatus: undefined,
  };
}

/** English plural of a lower-case word, as CRD generators make them (`policy` → `policies`, `box` → `boxes`). */
export function pluralize(word: string): string {
  if (/[^aeiou]y$/.test(word)) return `${word.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(word)) return `${word}es`;
  return `${word}s`;
}

/**
 * The resources declared by CustomResourceDefinition documents (other documents are skipped).
 * @throws Error naming the document when a CRD lacks its group or names.
 */
export function crdResources(documents: readonly unknown[]): KnownResource[] {
  const resources: KnownResource[] = [];
  for (const document of documents) {
    if (!isPlainObject(document) || document.kind !== 'CustomResourceDefinition') continue;
    const name =
      isPlainObject(document.metadata) && typeof document.metadata.name === 'string'
        ? document.metadata.name
        : '(unnamed)';
    const spec = isPlainObject(document.spec) ? document.spec : {};
    const names = isPlainObject(spec.names) ? spec.names : {};
    if (
      typeof spec.group !== 'string' ||
      typeof names.plural !== 'string' ||
      typeof names.kind !== 'string'
    ) {
      throw new Error(
        `CustomResourceDefinition ${name} has no spec.group, spec.names.plural or spec.names.kind`,
      );
    }
    const versions = Array.isArray(spec.versions) ? spec.versions.filter(isPlainObject) : [];
    resources.push({
      group: spec.group,
      versions: versions.map((v) => String(v.name)),
      plural: names.plural,
      singular: typeof names.singular === 'string' ? names.singular : names.kind.toLowerCase(),
      kind: names.kind,
      shortNames: Array.isArray(names.shortNames) ? names.shortNames.map(String) : [],
      namespaced: spec.scope !== 'Cluster',
      status: versions
        .filter((v) => isPlainObject(v.subresources) && v.subresources.status !== undefined)
        .map((v) => String(v.name)),
    });
  }
  return resources;
}
