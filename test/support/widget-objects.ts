/**
 * The Widget test resource as plain data: its resource description, its type and object builders.
 * Free of cluster imports, so unit specs (on fakes) and integration specs (on the control plane, via
 * `widgets.ts`) share one definition. The CRD itself is test/fixtures/widgets-crd.yaml.
 */
import type { Resource } from '../../src/framework/api/resource.js';
import type { KubeObject } from '../../src/framework/objects/kube-object.js';
import type { ObjectEvent } from '../../src/framework/watching/watch-events.js';

/** The test CRD `widgets.test.konductor.dev` (namespaced, status subresource). */
export const widgetResource: Resource = {
  group: 'test.konductor.dev',
  version: 'v1',
  plural: 'widgets',
  kind: 'Widget',
  namespaced: true,
  hasStatus: true,
};

/** Group, version and plural of Widgets, as `@kubernetes/client-node`'s custom-object calls take them. */
export const widgetIds = {
  group: widgetResource.group,
  version: widgetResource.version,
  plural: widgetResource.plural,
} as const;

/** `apiVersion` of every Widget: `test.konductor.dev/v1`. */
export const WIDGET_API_VERSION = `${widgetResource.group}/${widgetResource.version}`;

export interface Widget extends KubeObject {
  spec?: { size?: number; color?: string; [field: string]: unknown };
  status?: Record<string, unknown>;
}

/** What a spec says about a Widget; everything else takes the defaults of {@link widget}. */
export interface WidgetShape {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  /** Only for specs whose assertions name another group; prefer the default. */
  apiVersion?: string;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  /** Marked for deletion (a fixed `deletionTimestamp`). */
  deleting?: boolean;
}

/** The `deletionTimestamp` of a Widget built with `deleting: true`. */
export const WIDGET_DELETION_TIMESTAMP = '2024-05-01T11:00:00Z';

/**
 * A Widget as a user creates it: `w1` in `default`, UID `uid-1`, resourceVersion `1`, spec `{ size: 1 }`,
 * unless `shape` says otherwise. Optional metadata appears only when given.
 */
export function widget(shape: WidgetShape = {}): Widget {
  return {
    apiVersion: shape.apiVersion ?? WIDGET_API_VERSION,
    kind: widgetResource.kind,
    metadata: {
      name: shape.name ?? 'w1',
      namespace: shape.namespace ?? 'default',
      uid: shape.uid ?? 'uid-1',
      resourceVersion: shape.resourceVersion ?? '1',
      ...(shape.labels ? { labels: shape.labels } : {}),
      ...(shape.annotations ? { annotations: shape.annotations } : {}),
      ...(shape.finalizers ? { finalizers: shape.finalizers } : {}),
      ...(shape.deleting ? { deletionTimestamp: WIDGET_DELETION_TIMESTAMP } : {}),
    },
    spec: shape.spec ?? { size: 1 },
    ...(shape.status ? { status: shape.status } : {}),
  };
}

/** A watch event carrying a Widget built from `shape` (`MODIFIED`, not from a list, unless told). */
export function widgetEvent(
  shape: WidgetShape = {},
  options: { type?: ObjectEvent<Widget>['type']; fromList?: boolean } = {},
): ObjectEvent<Widget> {
  return {
    type: options.type ?? 'MODIFIED',
    object: widget(shape),
    fromList: options.fromList ?? false,
  };
}
