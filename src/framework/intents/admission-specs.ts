import type { ResourceSelector } from '../api/resource.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Logger } from '../observability/logger.js';
import type { ValueFilter } from './filters.js';
import type {
  HandlerOptions,
  ObjectContext,
  ObjectOf,
  SpecOf,
  StatusOf,
  TypedObject,
} from './handler-specs.js';
import type { Patch } from './patch.js';

/** What the API server is doing to the object when it asks the webhook. */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** Every operation an admission handler may ask for. */
export const ADMISSION_OPERATIONS: readonly AdmissionOperation[] = [
  'CREATE',
  'UPDATE',
  'DELETE',
  'CONNECT',
];

/** Who sent the request, as the API server authenticated them (`request.userInfo`). */
export interface AdmissionUser {
  /** `system:serviceaccount:<namespace>:<name>` for a ServiceAccount. */
  username: string;
  /** The user's uid, when the authenticator gives one. */
  uid?: string;
  /** The groups, such as `system:authenticated`. */
  groups: string[];
  /** What the authenticator adds (scopes, the ServiceAccount's Pod...). */
  extra: Record<string, string[]>;
}

/** A Kubernetes label selector, sent as is in the webhook configuration. */
export interface LabelSelector {
  /** Labels that must have these values. */
  matchLabels?: Record<string, string>;
  /** Conditions that must all hold. */
  matchExpressions?: {
    /** The label. */
    key: string;
    /** How the label relates to `values`. */
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    /** For `In` and `NotIn`; none for `Exists` and `DoesNotExist`. */
    values?: string[];
  }[];
}

/**
 * What a validating handler (`@on.validate`) receives: the object as it would be stored, the stored
 * one on UPDATE/DELETE, who asks and how. Refuse by throwing `AdmissionError`; push to `warnings` (or
 * return strings) to have `kubectl` print them.
 *
 * @example
 * ```ts
 * @on.validate('example.com/v1', 'widgets')
 * check({ spec, warnings }: AdmissionContext<Widget>) {
 *   if (spec.size > 9) throw new AdmissionError('spec.size must be at most 9');
 *   if (spec.size > 5) warnings.push('spec.size above 5 is slow');
 * }
 * ```
 */
export interface AdmissionContext<
  Spec = Record<string, unknown>,
  Status = Record<string, unknown>,
> extends Omit<ObjectContext<Spec, Status>, 'events'> {
  // The object's fields are as in ObjectContext, from `request.object` (on DELETE, `request.oldObject`:
  // there is no new object). On CREATE `uid` is empty and, with `generateName`, so may `name` be (the
  // API server sets them after admission). `memo` is the operator memo: the object may not exist yet.
  /** `request.oldObject`: the stored object, on UPDATE and DELETE; undefined otherwise. */
  old: ObjectOf<Spec, Status> | undefined;
  /** What the request does to the object. */
  operation: AdmissionOperation;
  /** The subresource the request is for (`status`, `scale`), or undefined for the object itself. */
  subresource: string | undefined;
  /** Who sent the request. */
  userInfo: AdmissionUser;
  /** True for `kubectl --dry-run=server`: nothing will be stored; do no side effects. */
  dryRun: boolean;
  /** Warnings sent back with the answer (`kubectl` prints them); allowed or not. */
  warnings: string[];
  /** Aborted when the answer is due (slightly before the handler's `timeoutSeconds`). */
  signal: AbortSignal;
}

/**
 * What a mutating handler (`@on.mutate`) receives: an {@link AdmissionContext} plus `patch`, the
 * merge patch change handlers use. The framework applies it to a copy of the object and answers with
 * the equivalent JSON patch.
 *
 * @example
 * ```ts
 * @on.mutate('example.com/v1', 'widgets')
 * defaults({ spec, patch }: MutationContext<Widget>) {
 *   if (spec.size === undefined) patch.spec.size = 1;
 *   patch.metadata.labels.team = 'widgets';
 * }
 * ```
 */
export interface MutationContext<
  Spec = Record<string, unknown>,
  Status = Record<string, unknown>,
> extends AdmissionContext<Spec, Status> {
  /** Changes to the object before it is stored; `null` deletes a field. */
  patch: Patch<SpecOf<Spec>, StatusOf<Spec, Status>>;
}

/**
 * Options of `@on.validate` and `@on.mutate`. The filters (`labels`, `annotations`, `when`,
 * `field`/`value`) are checked in the operator: an object that does not match is admitted without
 * running the handler. `namespaceSelector`/`objectSelector` are sent to the API server instead.
 */
export interface AdmissionOptions<T extends TypedObject = KubeObject> extends Omit<
  HandlerOptions<T>,
  'labelSelector' | 'fieldSelector'
> {
  /** A dotted path (`spec.size`) whose value must match `value` (default `PRESENT`) for the handler to run. */
  field?: string;
  /** With `field`: the value that must be there. */
  value?: ValueFilter;
  /** The operations the API server sends; default `['CREATE', 'UPDATE']`. */
  operations?: AdmissionOperation[];
  /** A subresource (`status`, `scale`) instead of the object itself. */
  subresource?: string;
  /** What the API server does when the webhook cannot be reached: refuse (`Fail`, default) or admit (`Ignore`). */
  failurePolicy?: 'Fail' | 'Ignore';
  /** Seconds the API server waits for the answer, 1 to 30; default 10. The framework answers "timed out" slightly before. */
  timeoutSeconds?: number;
  /** Only objects in namespaces matching it are sent (webhook configuration). */
  namespaceSelector?: LabelSelector;
  /** Only objects whose labels match it are sent (webhook configuration). */
  objectSelector?: LabelSelector;
}

/** A validating or mutating handler function; strings it returns (in an array) are warnings too. */
export type AdmissionHandlerFn = (context: MutationContext) => unknown;

/** A registered admission handler: one webhook (one path, one entry in the webhook configuration). */
export interface AdmissionSpec {
  /** Refuse or warn only (`validate`), or change the object too (`mutate`). */
  kind: 'validate' | 'mutate';
  /** Unique per kind: it names the webhook's path. */
  id: string;
  /** The resource whose requests are sent to the handler. */
  resource: ResourceSelector;
  /** As `@on.validate` and `@on.mutate` take them. */
  options: AdmissionOptions;
  /** The handler. */
  fn: AdmissionHandlerFn;
}

/** What a conversion handler (`@on.convert`) receives: one object and the version it must become. */
export interface ConversionContext {
  /** A copy of the object at `fromVersion`: change it or build a new one. */
  object: KubeObject;
  /** The object's `apiVersion` (`group/v1`). */
  fromVersion: string;
  /** The desired `apiVersion` (`group/v2`); the framework sets it on the result. */
  toVersion: string;
  /** The operator's logger, with the object and the handler bound. */
  logger: Logger;
}

/** A conversion handler function: returns the object at `toVersion`. */
export type ConversionFn = (context: ConversionContext) => KubeObject | Promise<KubeObject>;

/** A registered conversion handler: one per CRD (group and plural). */
export interface ConversionSpec {
  /** Names the handler in logs. */
  id: string;
  /** The CRD's group. */
  group: string;
  /** The CRD's plural. */
  name: string;
  /** The handler. */
  fn: ConversionFn;
}

/** An admission handler as its decorator records it on a class. */
export interface AdmissionDeclaration {
  kind: AdmissionSpec['kind'];
  resource: ResourceSelector;
  options: AdmissionOptions;
  method: string | symbol;
}

/** A conversion handler as its decorator records it on a class. */
export interface ConversionDeclaration {
  group: string;
  name: string;
  method: string | symbol;
}

/** The default operations and timeout, in one place for the server and the webhook configuration. */
export const ADMISSION_DEFAULTS = {
  operations: ['CREATE', 'UPDATE'] as readonly AdmissionOperation[],
  timeoutSeconds: 10,
  failurePolicy: 'Fail' as const,
};

/**
 * Checks admission options when they are declared, so a typo fails when the module loads, naming
 * the decorator and the option.
 */
export function checkAdmissionOptions(
  kind: AdmissionSpec['kind'],
  options: AdmissionOptions,
): void {
  const where = `@on.${kind}`;
  const { timeoutSeconds, operations, failurePolicy, subresource } = options;
  if (
    timeoutSeconds !== undefined &&
    !(Number.isInteger(timeoutSeconds) && timeoutSeconds >= 1 && timeoutSeconds <= 30)
  ) {
    throw new Error(
      `${where} timeoutSeconds: expected a whole number of seconds from 1 to 30 (the API server's limits), got ${String(timeoutSeconds)}`,
    );
  }
  if (operations !== undefined) {
    if (!Array.isArray(operations) || operations.length === 0)
      throw new Error(
        `${where} operations: expected a non-empty list of ${ADMISSION_OPERATIONS.join(', ')}`,
      );
    const unknown = operations.filter((operation) => !ADMISSION_OPERATIONS.includes(operation));
    if (unknown.length > 0)
      throw new Error(
        `${where} operations: unknown ${unknown.map((o) => JSON.stringify(o)).join(', ')}; expected ${ADMISSION_OPERATIONS.join(', ')}`,
      );
  }
  if (failurePolicy !== undefined && failurePolicy !== 'Fail' && failurePolicy !== 'Ignore') {
    throw new Error(
      `${where} failurePolicy: expected 'Fail' or 'Ignore', got ${JSON.stringify(failurePolicy)}`,
    );
  }
  if (subresource !== undefined && !/^[a-z][a-z0-9-]*$/.test(subresource)) {
    throw new Error(
      `${where} subresource: expected a subresource name such as 'status', got ${JSON.stringify(subresource)}`,
    );
  }
}
