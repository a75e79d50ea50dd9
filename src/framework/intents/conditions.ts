/**
 * `ctx.conditions`: a handler states a condition, the framework keeps `status.conditions` in the
 * `metav1.Condition` shape (kubectl, `kubectl wait --for=condition=Ready` and dashboards read it).
 * The decisions are pure; the handler's context collects what it set.
 */

/** A condition as `metav1.Condition` stores it. */
export interface Condition {
  /** CamelCase, what the condition is about (`Ready`); unique in the list. */
  type: string;
  /** Whether the condition holds. */
  status: 'True' | 'False' | 'Unknown';
  /** The generation the condition was computed from. */
  observedGeneration?: number;
  /** When `status` last changed (RFC 3339). */
  lastTransitionTime: string;
  /** CamelCase, why the condition is as it is. */
  reason: string;
  /** For humans. */
  message: string;
}

/** What a handler says about one condition. */
export interface ConditionInput {
  /** CamelCase; default `<type>` when true, `Not<type>` when false, `Unknown` otherwise. */
  reason?: string;
  /** For humans; default empty. */
  message?: string;
}

/** The object's conditions as a handler sees and sets them. */
export interface Conditions {
  /**
   * Sets a condition (`true`/`false` or `'True'`/`'False'`/`'Unknown'`), written with the handler's
   * status. Its `lastTransitionTime` moves only when its status changes.
   * @example conditions.set('Ready', pvc.status?.phase === 'Bound', { reason: 'Bound', message: `PVC ${name} is bound` })
   */
  set(type: string, status: boolean | Condition['status'], details?: ConditionInput): void;
  /** The condition as the object has it (or as set in this run). */
  get(type: string): Condition | undefined;
  /** Whether the condition is `True`. */
  isTrue(type: string): boolean;
}

/** A condition set in a run, before it is merged with the object's. */
export interface ConditionChange {
  type: string;
  status: Condition['status'];
  reason: string;
  message: string;
}

const TYPE =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
const MAX_MESSAGE = 32_768;

/** Checks and completes what a handler set; throws, naming the fault, on what the API server would refuse. */
export function conditionChange(
  type: string,
  status: boolean | Condition['status'],
  details: ConditionInput = {},
): ConditionChange {
  if (typeof type !== 'string' || type.length > 316 || !TYPE.test(type))
    throw new Error(
      `conditions.set: type ${JSON.stringify(type)} is not a condition type (such as 'Ready')`,
    );
  const value = status === true ? 'True' : status === false ? 'False' : status;
  if (value !== 'True' && value !== 'False' && value !== 'Unknown')
    throw new Error(
      `conditions.set('${type}'): status must be true, false, 'True', 'False' or 'Unknown'`,
    );
  const word = type.slice(type.lastIndexOf('/') + 1).replace(/[^A-Za-z0-9_]/g, '');
  const reason =
    details.reason ?? (value === 'Unknown' ? 'Unknown' : value === 'True' ? word : `Not${word}`);
  if (typeof reason !== 'string' || !REASON.test(reason) || reason.length > 1024) {
    throw new Error(
      `conditions.set('${type}'): reason ${JSON.stringify(reason)} must be CamelCase (letters, digits, _ , :)`,
    );
  }
  const message = String(details.message ?? '');
  return {
    type,
    status: value,
    reason,
    message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message,
  };
}

/** The object's conditions, read defensively: status is attacker-controlled, so malformed entries are dropped. */
export function readConditions(status: unknown): Condition[] {
  const list = (status as { conditions?: unknown } | undefined)?.conditions;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (entry): entry is Condition =>
      typeof entry === 'object' &&
      entry !== null &&
      typeof (entry as Condition).type === 'string' &&
      typeof (entry as Condition).status === 'string',
  );
}

/**
 * The conditions after `changes`, or undefined when they would be as they are: each change replaces
 * its type's entry (kept in place; new types go last), with `lastTransitionTime` kept unless the
 * status changed, and `observedGeneration` the object's generation.
 */
export function nextConditions(
  current: readonly Condition[],
  changes: readonly ConditionChange[],
  generation: number | undefined,
  now: Date,
): Condition[] | undefined {
  if (changes.length === 0) return undefined;
  const next = current.map((condition) => ({ ...condition }));
  let changed = false;
  for (const change of changes) {
    const index = next.findIndex((condition) => condition.type === change.type);
    const old = index >= 0 ? next[index] : undefined;
    const transition =
      old === undefined ||
      old.status !== change.status ||
      typeof old.lastTransitionTime !== 'string';
    const condition: Condition = {
      type: change.type,
      status: change.status,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
      lastTransitionTime: transition
        ? now.toISOString().replace(/\.\d{3}Z$/, 'Z')
        : old.lastTransitionTime,
      reason: change.reason,
      message: change.message,
    };
    if (old !== undefined && sameCondition(old, condition)) continue;
    changed = true;
    if (index >= 0) next[index] = condition;
    else next.push(condition);
  }
  return changed ? next : undefined;
}

function sameCondition(a: Condition, b: Condition): boolean {
  return (
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.lastTransitionTime === b.lastTransitionTime &&
    a.observedGeneration === b.observedGeneration
  );
}

/**
 * Puts what a handler set through `ctx.conditions` into its status patch: the whole
 * `status.conditions` list (a merge patch replaces lists), and `status.observedGeneration` beside it
 * when `observed`. Nothing when it set nothing, or nothing that changes them.
 */
export function conditionsPatch(
  status: unknown,
  changes: readonly ConditionChange[],
  generation: number | undefined,
  now: Date,
  observed: boolean,
): Record<string, unknown> | undefined {
  const conditions = nextConditions(readConditions(status), changes, generation, now);
  if (!conditions) return undefined;
  const current = (status as { observedGeneration?: unknown } | undefined)?.observedGeneration;
  return observed && generation !== undefined && current !== generation
    ? { conditions, observedGeneration: generation }
    : { conditions };
}

/** The `ctx.conditions` of one handler run over `status`, and the changes it collected. */
export function conditionsOf(status: unknown): {
  conditions: Conditions;
  changes: ConditionChange[];
} {
  const changes: ConditionChange[] = [];
  const current = readConditions(status);
  const get = (type: string): Condition | undefined => {
    const set = [...changes].reverse().find((change) => change.type === type);
    const stored = current.find((condition) => condition.type === type);
    if (!set) return stored;
    return {
      ...set,
      lastTransitionTime:
        stored?.status === set.status ? stored.lastTransitionTime : new Date().toISOString(),
    };
  };
  const conditions: Conditions = {
    set: (type, value, details) => void changes.push(conditionChange(type, value, details)),
    get,
    isTrue: (type) => get(type)?.status === 'True',
  };
  return { conditions, changes };
}
