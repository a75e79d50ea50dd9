import { getField, parseFieldPath } from '../objects/field-path.js';
import type { KubeObject } from '../objects/kube-object.js';
import { filterContext, type FilterContext, type FilterScope } from './filter-context.js';

/** Matches a label or annotation that exists, whatever its value (an empty string counts). */
export const PRESENT: unique symbol = Symbol('konductor.present');
/** Matches a label or annotation that does not exist. */
export const ABSENT: unique symbol = Symbol('konductor.absent');

/** A filter on one label or annotation: an exact value, {@link PRESENT}, {@link ABSENT}, or a predicate. */
export type MetaFilter =
  string | typeof PRESENT | typeof ABSENT | ((value: string | undefined) => boolean);

/** A filter on a field value: a literal (deep-equal), {@link PRESENT}, {@link ABSENT}, or a predicate. */
export type ValueFilter =
  typeof PRESENT | typeof ABSENT | ((value: unknown) => boolean) | string | number | boolean | null;

export function matchesMeta(
  values: Record<string, string> | undefined,
  filters: Record<string, MetaFilter> | undefined,
): boolean {
  if (!filters) return true;
  return Object.entries(filters).every(([key, filter]) => {
    const value = values?.[key];
    if (filter === PRESENT) return value !== undefined;
    if (filter === ABSENT) return value === undefined;
    if (typeof filter === 'function') return filter(value);
    return value === filter;
  });
}

export function matchesValue(value: unknown, filter: ValueFilter | undefined): boolean {
  if (filter === undefined) return true;
  if (filter === PRESENT) return value !== undefined;
  if (filter === ABSENT) return value === undefined;
  if (typeof filter === 'function') return filter(value);
  return value === filter;
}

/** Object-level filters every handler kind supports. */
export interface ObjectFilters<T extends KubeObject = KubeObject> {
  labels?: Record<string, MetaFilter>;
  annotations?: Record<string, MetaFilter>;
  /** Receives the object's {@link FilterContext} (its parts, resource and memo), as Kopf's `when`. */
  when?: (context: FilterContext<T>) => boolean;
  /** With `value`: the field must hold a matching value. */
  field?: string;
  value?: ValueFilter;
}

/**
 * Whether an object passes labels, annotations, `when`, and `field`+`value`. `scope` gives `when` the
 * object's resource and memo; the context is built only for a handler that has a `when`.
 */
export function matchesObject(
  object: KubeObject,
  filters: ObjectFilters,
  scope?: FilterScope,
): boolean {
  if (!matchesMeta(object.metadata?.labels, filters.labels)) return false;
  if (!matchesMeta(object.metadata?.annotations, filters.annotations)) return false;
  if (
    filters.field !== undefined &&
    filters.value !== undefined &&
    !matchesValue(getField(object, parseFieldPath(filters.field)), filters.value)
  ) {
    return false;
  }
  return filters.when ? filters.when(filterContext(object, scope)) : true;
}
