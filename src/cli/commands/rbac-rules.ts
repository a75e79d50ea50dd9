// Least-privilege RBAC rules for a set of handlers: what the framework does with each resource a
// handler watches, plus what the framework itself needs (Events, its Lease), plus the user's own
// rules. Pure: `konductor manifests` turns the result into Roles and ClusterRoles.
import type { ResourceSelector } from '../../framework/api/resource.js';
import type { HandlerSpec } from '../../framework/intents/handler-specs.js';
import { resolveResourceName, type KnownResource, type NameSource } from './resource-names.js';

/** One RBAC rule, as in a Role or ClusterRole. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** What a handler declares that matters for RBAC: its kind and the resource it watches. */
export interface HandlerUse {
  kind: HandlerSpec['kind'];
  resource: ResourceSelector;
  /** An `@on.owned` handler also watches its child resource (read only). */
  child?: { resource: ResourceSelector };
  /** An `@on.reconcile` handler manages the children it owns, and reads (only) the resources it maps. */
  owns?: readonly { resource: ResourceSelector }[];
  watches?: readonly { resource: ResourceSelector }[];
}

/** A resource the handlers watch, with what the framework does with it. */
export interface WatchedResource {
  group: string;
  plural: string;
  /** The names handlers wrote for it (`widgets`, `Widget`, …). */
  writtenAs: string[];
  /** How the plural was found; `guessed` when some handler's name had to be pluralized by rule. */
  source: NameSource;
  /** Undefined when unknown offline. */
  namespaced: boolean | undefined;
  /** Undefined when unknown offline (then status is granted: a rule for a missing subresource grants nothing). */
  hasStatus: boolean | undefined;
  /** Whether the framework writes it (any handler other than `@on.event`): finalizers, progress, status. */
  writes: boolean;
}

/** The derived rules: for the watched namespaces (or cluster-wide), and for the Lease's namespace. */
export interface RbacRules {
  resources: WatchedResource[];
  /** Watched resources, Events and the user's extra rules. */
  rules: PolicyRule[];
  /**
   * Leader election: create any Lease (creation cannot be limited by name), read and renew only ours,
   * and list them (a leader without sharding waits while replicas with it still hold member Leases).
   * With sharding, every Lease of the operator's namespace: member Leases are named at each start.
   */
  leaseRules: PolicyRule[];
}

/** RBAC verbs in the order Kubernetes documents them; `--rule` accepts these. */
export const VERBS = [
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
] as const;

/**
 * The framework's verbs per watched resource: list and watch for the shared watch; for handlers
 * other than `@on.event` also get (re-reading an object before a retry or a finalizer release) and
 * patch (finalizer, progress and timer annotations, `patch` from handlers); status changes go to the
 * `/status` subresource with patch. Events are core/v1 Events, created and patched (a repeated Event
 * bumps its count, as client-go's recorder does; events.k8s.io is never used). Leases are read, created and replaced
 * (PUT = update). The framework never lists Namespaces: globs are matched on each watch event.
 */
export function deriveRbacRules(
  handlers: readonly HandlerUse[],
  options: {
    leaseName: string;
    crds?: readonly KnownResource[];
    extraRules?: readonly PolicyRule[];
    /** Replicas share the objects out: each holds a member Lease named at its start, and the coordinator names heirs on departed ones and removes them. */
    sharding?: boolean;
  },
): RbacRules {
  const byResource = new Map<string, WatchedResource>();
  // Children of @on.owned and mapped resources are listed and watched, never written by the framework.
  const watchedOnly = (handler: HandlerUse): HandlerUse[] =>
    [...(handler.child ? [handler.child] : []), ...(handler.watches ?? [])].map(({ resource }) => ({
      kind: 'event',
      resource,
    }));
  const uses = handlers.flatMap((handler): HandlerUse[] => [handler, ...watchedOnly(handler)]);
  // What a reconcile owns it makes, changes (server-side apply is a PATCH that may create) and removes.
  const managed = handlers
    .flatMap((handler) => handler.owns ?? [])
    .map(({ resource }) => resolveResourceName(resource, options.crds));
  for (const handler of uses) {
    const resolved = resolveResourceName(handler.resource, options.crds);
    const key = `${resolved.group}/${resolved.plural}`;
    const entry = byResource.get(key) ?? {
      group: resolved.group,
      plural: resolved.plural,
      writtenAs: [],
      source: resolved.source,
      namespaced: resolved.namespaced,
      hasStatus: resolved.hasStatus,
      writes: false,
    };
    if (!entry.writtenAs.includes(handler.resource.name))
      entry.writtenAs.push(handler.resource.name);
    if (resolved.source === 'guessed') entry.source = 'guessed';
    entry.namespaced ??= resolved.namespaced;
    entry.hasStatus ??= resolved.hasStatus;
    entry.writes ||= handler.kind !== 'event';
    byResource.set(key, entry);
  }
  const resources = [...byResource.values()].sort(
    (a, b) => a.group.localeCompare(b.group) || a.plural.localeCompare(b.plural),
  );

  const rules: PolicyRule[] = [];
  for (const resource of resources) {
    rules.push({
      apiGroups: [resource.group],
      resources: [resource.plural],
      verbs: resource.writes ? ['get', 'list', 'watch', 'patch'] : ['list', 'watch'],
    });
    if (resource.writes && resource.hasStatus !== false) {
      rules.push({
        apiGroups: [resource.group],
        resources: [`${resource.plural}/status`],
        verbs: ['patch'],
      });
    }
  }
  for (const child of managed)
    rules.push({
      apiGroups: [child.group],
      resources: [child.plural],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    });
  rules.push({ apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] });
  for (const rule of options.extraRules ?? []) rules.push(rule);

  return {
    resources,
    rules: mergeRules(rules),
    leaseRules: options.sharding
      ? [
          {
            apiGroups: ['coordination.k8s.io'],
            resources: ['leases'],
            verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'],
          },
        ]
      : [
          { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'create'] },
          {
            apiGroups: ['coordination.k8s.io'],
            resources: ['leases'],
            resourceNames: [options.leaseName],
            verbs: ['get', 'update'],
          },
        ],
  };
}

/**
 * Rules with the same group, verbs and names folded into one (resources listed together), verbs
 * in canonical order, duplicates dropped; the order of first appearance is kept.
 */
export function mergeRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const merged = new Map<string, PolicyRule>();
  for (const rule of rules) {
    const verbs = sortVerbs(rule.verbs);
    for (const group of rule.apiGroups) {
      const key = JSON.stringify([group, verbs, rule.resourceNames ?? []]);
      const into = merged.get(key) ?? {
        apiGroups: [group],
        resources: [],
        verbs,
        ...(rule.resourceNames ? { resourceNames: [...rule.resourceNames] } : {}),
      };
      for (const resource of rule.resources)
        if (!into.resources.includes(resource)) into.resources.push(resource);
      merged.set(key, into);
    }
  }
  return [...merged.values()];
}

function sortVerbs(verbs: readonly string[]): string[] {
  const rank = (verb: string): number => {
    const index = (VERBS as readonly string[]).indexOf(verb);
    return index < 0 ? VERBS.length : index;
  };
  return [...new Set(verbs)].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** A `--rule` that cannot be parsed; the message says what the flag accepts. */
export class RuleSyntaxError extends Error {
  override readonly name = 'RuleSyntaxError';
}

const GROUP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const RESOURCE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const RULE_FORMAT =
  "'[<group>/]<resource>[/<subresource>]=<verb>,...' (e.g. 'apps/deployments=get,list,watch,create,patch', 'secrets=get', 'core/pods/log=get')";

/**
 * Parses a `--rule`: `[<group>/]<resource>[/<subresource>]=<verb>,...`. Without a group the rule is
 * for the core group; `core/` names the core group explicitly, needed for core subresources
 * (`core/pods/log=get`), since `a/b` always means group `a`, resource `b`. Wildcards are refused:
 * least privilege means naming each resource and verb.
 * @throws {@link RuleSyntaxError}
 */
export function parseRule(text: string): PolicyRule {
  const equals = text.indexOf('=');
  if (equals < 0) throw new RuleSyntaxError(`--rule '${text}' has no '=': use ${RULE_FORMAT}`);
  const target = text.slice(0, equals).trim();
  const verbs = text
    .slice(equals + 1)
    .split(',')
    .map((verb) => verb.trim())
    .filter((verb) => verb !== '');
  const parts = target.split('/');
  if (
    parts.length > 3 ||
    parts.some((part, index) => part === '' && !(index === 0 && parts.length > 1))
  ) {
    throw new RuleSyntaxError(
      `--rule '${text}': '${target}' is not [<group>/]<resource>[/<subresource>]; use ${RULE_FORMAT}`,
    );
  }
  const [group, resource, subresource] =
    parts.length === 1
      ? ['', parts[0]!, undefined]
      : [parts[0] === 'core' ? '' : parts[0]!, parts[1]!, parts[2]];
  if (group !== '' && (group.length > 253 || !GROUP.test(group))) {
    throw new RuleSyntaxError(
      `--rule '${text}': API group '${group}' is not a DNS subdomain (use lower-case letters, digits, '-' and '.'; 'core' or nothing for the core group)`,
    );
  }
  for (const name of [resource, subresource]) {
    if (name !== undefined && !RESOURCE.test(name)) {
      throw new RuleSyntaxError(
        `--rule '${text}': '${name}' is not a resource name (the lower-case plural, e.g. 'deployments'; wildcards are not accepted)`,
      );
    }
  }
  if (verbs.length === 0)
    throw new RuleSyntaxError(`--rule '${text}' names no verbs: use ${RULE_FORMAT}`);
  const unknown = verbs.filter((verb) => !(VERBS as readonly string[]).includes(verb));
  if (unknown.length > 0)
    throw new RuleSyntaxError(
      `--rule '${text}': unknown verb(s) ${unknown.map((v) => `'${v}'`).join(', ')}; use ${VERBS.join(', ')}`,
    );
  return {
    apiGroups: [group],
    resources: [subresource === undefined ? resource : `${resource}/${subresource}`],
    verbs: sortVerbs(verbs),
  };
}
