import { stackedOnOneMethod, type HandlerSpec } from '../intents/handler-specs.js';
import type { FilterContext } from '../intents/filter-context.js';
import type { KubeObject } from '../objects/kube-object.js';
import { fieldSelectorMatcher } from '../watching/field-selector.js';
import { labelSelectorMatcher } from '../watching/label-selector.js';
import type { WatchScope } from '../watching/watch-hub.js';

/** One watch of a resolved resource in one namespace scope, and the handlers it feeds. */
export interface WatchPlan {
  scope: WatchScope;
  /** The handlers, those whose selectors could not go to the server checking them in the operator. */
  handlers: HandlerSpec[];
}

/**
 * Plans the one watch all handlers of a resource share. When they all carry the same label and
 * field selectors, the server filters; otherwise the watch takes every object and each handler
 * with a selector applies it itself (a server-side selector would hide objects from the others).
 * Throws, naming the handler, when a selector cannot be parsed or two handlers share an id.
 */
export function planWatch(
  handlers: readonly HandlerSpec[],
  namespace: string | undefined,
): WatchPlan {
  // Progress is keyed by handler id on the object, so two handlers naming the resource differently must not share one.
  const ids = new Map<string, HandlerSpec>();
  for (const spec of handlers) {
    if (spec.kind === 'event') continue; // no progress record to share
    const same = ids.get(spec.id);
    if (same && !stackedOnOneMethod(same, spec)) {
      throw new Error(
        `handler id '${spec.id}' is registered twice for this resource (as ${handlers
          .filter((h) => h.id === spec.id && h.kind !== 'event')
          .map((h) => `'${h.resource.name}'`)
          .join(' and ')}); give one an explicit id`,
      );
    }
    ids.set(spec.id, spec);
  }
  const reconciles = handlers.filter((spec) => spec.kind === 'reconcile');
  if (reconciles.length > 1)
    throw new Error(
      `one @on.reconcile per resource, found ${reconciles.map((spec) => `'${spec.id}'`).join(' and ')}: make them one handler`,
    );
  const selectors = new Set(
    handlers.map((spec) =>
      JSON.stringify([spec.options.labelSelector ?? '', spec.options.fieldSelector ?? '']),
    ),
  );
  if (selectors.size <= 1) {
    const first = handlers[0]?.options;
    return {
      scope: {
        namespace,
        labelSelector: first?.labelSelector || undefined,
        fieldSelector: first?.fieldSelector || undefined,
      },
      handlers: [...handlers],
    };
  }
  return { scope: { namespace }, handlers: handlers.map(withClientSideSelectors) };
}

/** The handler with its selectors folded into its `when` filter, which every handler kind honours. */
function withClientSideSelectors(spec: HandlerSpec): HandlerSpec {
  const { labelSelector, fieldSelector, when } = spec.options;
  if (!labelSelector && !fieldSelector) return spec;
  let labels: ((labels: Readonly<Record<string, string>> | undefined) => boolean) | undefined;
  let fields: ((object: KubeObject) => boolean) | undefined;
  try {
    labels = labelSelector ? labelSelectorMatcher(labelSelector) : undefined;
    fields = fieldSelector ? fieldSelectorMatcher(fieldSelector) : undefined;
  } catch (error) {
    throw new Error(
      `handler ${spec.id}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const matches = (context: FilterContext): boolean =>
    (labels === undefined || labels(context.metadata.labels)) &&
    (fields === undefined || fields(context.body)) &&
    (when === undefined || when(context));
  return { ...spec, options: { ...spec.options, when: matches } } as HandlerSpec;
}
