import { METADATA } from './metadata.js';
import type { ActivityDeclaration, ActivitySpec } from '../intents/activity-specs.js';

/** Key under which activity declarations (`@on.startup`, `@on.cleanup`, `@on.probe`) are stored in a class's decorator metadata. */
export const ACTIVITIES = Symbol.for('konductor.activities');

/** The activity declarations of a decorated class (its parents' included). */
export function activityDeclarationsOf(cls: unknown): readonly ActivityDeclaration[] {
  if (typeof cls !== 'function') return [];
  const metadata = (
    cls as unknown as Record<
      symbol,
      Record<symbol, ActivityDeclaration[] | undefined> | null | undefined
    >
  )[METADATA];
  return metadata?.[ACTIVITIES] ?? [];
}

/** The activity handlers of an instance of a decorated class, each bound to it; ids default to `Class.method`. */
export function activitySpecsOf(instance: object): ActivitySpec[] {
  const cls = instance.constructor;
  const methods = instance as Record<string | symbol, unknown>;
  return activityDeclarationsOf(cls).map(({ kind, options, method }) => {
    const fn = methods[method];
    if (typeof fn !== 'function') throw new Error(`${cls.name}.${String(method)} is not a method`);
    return {
      kind,
      id: options.id ?? `${cls.name}.${String(method)}`,
      options,
      fn: (fn as ActivitySpec['fn']).bind(instance),
    };
  });
}

/** Checks that an activity id is not taken by another handler of the same activity. */
export function checkActivityId(existing: readonly ActivitySpec[], spec: ActivitySpec): void {
  if (existing.some((other) => other.kind === spec.kind && other.id === spec.id)) {
    throw new Error(
      `${spec.kind} handler id '${spec.id}' is registered twice; give one an explicit id`,
    );
  }
}
