import type { ChangeHandlerSpec } from '../intents/handler-specs.js';
import { matchesObject, matchesValue, PRESENT } from '../intents/filters.js';
import type { FilterScope } from '../intents/filter-context.js';
import { getField, parseFieldPath } from '../objects/field-path.js';
import type { KubeObject } from '../objects/kube-object.js';
import { narrowDiff, type Diff } from '../state/diff.js';
import { chooseDiffBase } from '../state/bookkeeping.js';
import type { Identity } from '../state/identity.js';
import type { Storage } from '../state/storage.js';
import type { Cause } from './causes.js';

/** A handler chosen for a cause, with `old`/`new`/`diff` narrowed to its field. */
export interface Selection {
  handler: ChangeHandlerSpec;
  old: unknown;
  new: unknown;
  diff: Diff;
}

/**
 * Whether a handler wants this object at all (object-level filters). For update handlers,
 * `field`+`value` also matches the field's old value (from the diff-base), as documented and as in
 * Kopf; otherwise a change away from the value could never run them. `identity` says whose diff-base that is,
 * `storage` where it is read first, `scope` what `when` sees besides the object (resource, memo).
 */
export function isRelevant(
  handler: ChangeHandlerSpec,
  body: KubeObject,
  identity: Identity,
  storage: Storage = 'annotations',
  scope?: FilterScope,
): boolean {
  const { field, value } = handler.options;
  // As in Kopf: for create, resume and delete handlers, `field` without `value` means "the field is present".
  if (handler.kind !== 'update' && field !== undefined && value === undefined)
    return matchesObject(body, { ...handler.options, value: PRESENT }, scope);
  if (matchesObject(body, handler.options, scope)) return true;
  if (handler.kind !== 'update' || field === undefined || value === undefined) return false;
  const old = chooseDiffBase(body, identity, storage).essence;
  return (
    old !== undefined &&
    matchesObject(body, { ...handler.options, value: undefined }, scope) &&
    matchesValue(getField(old, parseFieldPath(field)), value)
  );
}

/**
 * The handlers among `relevant` that this cause runs, in their order, each id once: a method under
 * stacked decorators (`@on.update` over `@on.resume`) runs once, as the first of its causes chosen.
 */
export function selectHandlers(
  cause: Cause,
  relevant: readonly ChangeHandlerSpec[],
  resuming: boolean,
): Selection[] {
  const seen = new Set<string>();
  return chooseHandlers(cause, relevant, resuming).filter(
    ({ handler }) => !seen.has(handler.id) && seen.add(handler.id),
  );
}

function chooseHandlers(
  cause: Cause,
  relevant: readonly ChangeHandlerSpec[],
  resuming: boolean,
): Selection[] {
  const whole = (handler: ChangeHandlerSpec): Selection => ({
    handler,
    old: undefined,
    new: undefined,
    diff: [],
  });
  switch (cause.reason) {
    case 'create':
      return relevant.filter((h) => h.kind === 'create').map(whole);
    case 'resume':
      return relevant.filter((h) => h.kind === 'resume').map(whole);
    case 'delete':
      return relevant
        .filter(
          (h) => h.kind === 'delete' || (h.kind === 'resume' && resuming && h.options.deleted),
        )
        .map(whole);
    case 'update': {
      const chosen: Selection[] = [];
      for (const handler of relevant) {
        if (handler.kind === 'resume' && resuming) chosen.push(whole(handler));
        if (handler.kind !== 'update') continue;
        const field = handler.options.field;
        const path = field ? parseFieldPath(field) : undefined;
        const changes = path ? narrowDiff(cause.diff, path) : cause.diff;
        if (changes.length === 0) continue;
        const old = path ? getField(cause.old, path) : cause.old;
        const current = path ? getField(cause.new, path) : cause.new;
        const { value, old: oldFilter, new: newFilter } = handler.options;
        if (value !== undefined && !matchesValue(old, value) && !matchesValue(current, value))
          continue;
        if (!matchesValue(old, oldFilter) || !matchesValue(current, newFilter)) continue;
        chosen.push({ handler, old, new: current, diff: changes });
      }
      return chosen;
    }
    default:
      return [];
  }
}
