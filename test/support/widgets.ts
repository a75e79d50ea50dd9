import { fileURLToPath } from 'node:url';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { Resource } from '../../src/framework/api/resource.js';
import type { KubeObject } from '../../src/framework/objects/kube-object.js';
import { installCrds, readCrds, waitFor } from '../../src/testing/index.js';
import { sharedKubeConfig, statusOf } from './cluster.js';

/** The test CRD `widgets.test.konductor.dev` (namespaced, status subresource). */
export const widgetResource: Resource = {
  group: 'test.konductor.dev',
  version: 'v1',
  plural: 'widgets',
  kind: 'Widget',
  namespaced: true,
  hasStatus: true,
};

export interface Widget extends KubeObject {
  spec?: { size?: number; color?: string };
  status?: Record<string, unknown>;
}

const crdFile = fileURLToPath(new URL('../fixtures/widgets-crd.yaml', import.meta.url));

export async function installWidgetCrd(kc: KubeConfig): Promise<void> {
  await installCrds(kc, readCrds(crdFile));
}

/** Small client for the test Widgets. */
export class Widgets {
  private readonly api: CustomObjectsApi;
  private readonly ids = { group: widgetResource.group, version: widgetResource.version, plural: widgetResource.plural };

  constructor(kc: KubeConfig, private readonly namespace: string) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  create(name: string, spec: Widget['spec'] = { size: 1 }): Promise<Widget> {
    return this.api.createNamespacedCustomObject({
      ...this.ids,
      namespace: this.namespace,
      body: { apiVersion: 'test.konductor.dev/v1', kind: 'Widget', metadata: { name }, spec },
    }) as Promise<Widget>;
  }

  createLabelled(name: string, labels: Record<string, string>): Promise<Widget> {
    return this.api.createNamespacedCustomObject({
      ...this.ids,
      namespace: this.namespace,
      body: { apiVersion: 'test.konductor.dev/v1', kind: 'Widget', metadata: { name, labels }, spec: { size: 1 } },
    }) as Promise<Widget>;
  }

  /** Creates a widget from a whole body (annotations, labels, a copy of another object…). */
  createFrom(body: Widget): Promise<Widget> {
    return this.api.createNamespacedCustomObject({
      ...this.ids,
      namespace: this.namespace,
      body: { apiVersion: 'test.konductor.dev/v1', kind: 'Widget', ...body },
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

/** Polls until `condition` holds; throws with `what` after `timeoutMs`. */
export async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(condition, { what, timeoutMs });
}

/** Reads a widget from the shared control plane; undefined once it is gone. */
export async function readWidget(namespace: string, name: string): Promise<Widget | undefined> {
  try {
    return (await sharedKubeConfig()
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ group: widgetResource.group, version: widgetResource.version, plural: widgetResource.plural, namespace, name })) as Widget;
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
