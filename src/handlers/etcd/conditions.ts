import type { Condition } from './types.js';

/**
 * Sets one condition. Unchanged status, reason and message leave it as it was (no status write for
 * nothing); a changed status moves `lastTransitionTime`.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: Omit<Condition, 'lastUpdateTime' | 'lastTransitionTime'>,
  now = new Date(),
): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === next.type);
  const before = index >= 0 ? list[index] : undefined;
  if (
    before &&
    before.status === next.status &&
    before.reason === next.reason &&
    before.message === next.message
  )
    return list;
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const condition: Condition = {
    ...next,
    lastUpdateTime: stamp,
    lastTransitionTime: before && before.status === next.status ? before.lastTransitionTime : stamp,
  };
  if (index >= 0) list[index] = condition;
  else list.push(condition);
  return list;
}

/** Marks a condition False (if present) without inventing one that never was. */
export function clearCondition(
  conditions: readonly Condition[] | undefined,
  type: Condition['type'],
  now = new Date(),
): Condition[] {
  const before = conditions?.find((c) => c.type === type);
  if (!before || before.status === 'False') return [...(conditions ?? [])];
  return setCondition(
    conditions,
    { type, status: 'False', reason: before.reason, message: before.message },
    now,
  );
}

/**
 * Sets a condition True only where it was False: a cluster that never had the problem carries no
 * such condition (and no status write for it).
 */
export function restoreCondition(
  conditions: readonly Condition[] | undefined,
  next: Omit<Condition, 'status' | 'lastUpdateTime' | 'lastTransitionTime'>,
  now = new Date(),
): Condition[] | undefined {
  const before = conditions?.find((c) => c.type === next.type);
  if (!before || before.status === 'True') return conditions ? [...conditions] : undefined;
  return setCondition(conditions, { ...next, status: 'True' }, now);
}
