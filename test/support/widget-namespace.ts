/**
 * The preamble of an integration spec on Widgets, in one call: the worker's control plane, the
 * Widget CRD installed, a namespace of the test's own and a client for the Widgets in it.
 *
 * ```ts
 * const { kc, namespace, widgets } = await widgetNamespace('retry');
 * ```
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { sharedKubeConfig, uniqueNamespace } from './cluster.js';
import { installWidgetCrd, Widgets } from './widgets.js';

/** What a spec on Widgets starts from. */
export interface WidgetNamespace {
  /** The admin KubeConfig of this jest worker's control plane. */
  kc: KubeConfig;
  /** A namespace no other test uses: its name starts with the prefix given. */
  namespace: string;
  /** A client for the Widgets in `namespace`. */
  widgets: Widgets;
}

/** Installs the Widget CRD (idempotent) and creates a namespace named `<prefix>-<random>`. */
export async function widgetNamespace(prefix: string): Promise<WidgetNamespace> {
  const kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  const namespace = await uniqueNamespace(kc, prefix);
  return { kc, namespace, widgets: new Widgets(kc, namespace) };
}
