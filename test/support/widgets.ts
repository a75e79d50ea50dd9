/**
 * The Widget test resource on the shared control plane: installing its CRD, a small client, reads.
 * The resource, type and object builders are in `widget-objects.ts` (no cluster imports, for unit specs).
 */
import { fileURLToPath } from 'node:url';
import {
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { installCrds, readCrds } from '../../src/testing/index.js';
import { sharedKubeConfig, statusOf } from './cluster.js';
import { WIDGET_API_VERSION, widgetIds, type Widget } from './widget-objects.js';

export {
  WIDGET_API_VERSION,
  widget,
  widgetIds,
  widgetResource,
  type Widget,
  type WidgetShape,
} from './widget-objects.js';

const crdFile = fileURLToPath(new URL('../fixtures/widgets-crd.yaml', import.meta.url));

export async function installWidgetCrd(kc: KubeConfig): Promise<void> {
  await installCrds(kc, readCrds(crdFile));
}

/** Small client for the test Widgets. */
export class Widgets {
  private readonly api: CustomObjectsApi;
  private readonly ids = widgetIds;

  constructor(
    kc: KubeConfig,
    private readonly namespace: string,
  ) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  create(name: string, spec: Widget['spec'] = { size: 1 }): Promise<Widget> {
    return this.api.createNamespacedCustomObject({
      ...this.ids,
      namespace: this.namespace,
      body: { apiVersion: WIDGET_API_VERSION, kind: 'Widget', metadata: { name }, spec },
    }) as Promise<Widget>;
  }

  createLabelled(name: string, labels: Record<string, string>): Promise<Widget> {
    return this.api.createNamespacedCustomObject({
      ...this.ids,
      namespace: this.namespace,
      body: {
        apiVersion: WIDGET_API_VERSION,
        kind: 'Widget',
        metadata: { name, labels },
        spec: { size: 1 },
      },
    }) as Promise<Widget>;
  }

  /** Creates a widget from a whole body (annotations, labels, a copy of another object…). */
  createFrom(body: Widget): Promise<Widget> {
    return this.api.createNamespacedCustomObject({
      ...this.ids,
      namespace: this.namespace,
      body: { apiVersion: WIDGET_API_VERSION, kind: 'Widget', ...body },
    }) as Promise<Widget>;
  }

  /** Creates `count` widgets named `<prefix>-<i>`, `parallel` requests at a time. */
  async createMany(prefix: string, count: number, parallel = 16): Promise<void> {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < count) {
        const i = next++;
        await this.create(`${prefix}-${i}`, { size: i });
      }
    };
    await Promise.all(Array.from({ length: parallel }, worker));
  }

  patchSpec(name: string, spec: Widget['spec']): Promise<Widget> {
    return this.api.patchNamespacedCustomObject(
      { ...this.ids, namespace: this.namespace, name, body: { spec } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    ) as Promise<Widget>;
  }

  delete(name: string): Promise<unknown> {
    return this.api.deleteNamespacedCustomObject({ ...this.ids, namespace: this.namespace, name });
  }
}

/** Reads a widget from the shared control plane; undefined once it is gone. */
export async function readWidget(namespace: string, name: string): Promise<Widget | undefined> {
  try {
    return (await sharedKubeConfig()
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...widgetIds, namespace, name })) as Widget;
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

/** Reads a widget that must exist (fails the test with a clear message otherwise). */
export async function getWidget(namespace: string, name: string): Promise<Widget> {
  const widget = await readWidget(namespace, name);
  if (!widget) throw new Error(`widget ${namespace}/${name} does not exist`);
  return widget;
}
