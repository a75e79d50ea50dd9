import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { widgetResource } from '../test/support/widgets.js';

/** Creates a namespace and `count` widgets in it, 32 requests at a time; returns the seconds it took. */
export async function createWidgets(kc: KubeConfig, namespace: string, count: number): Promise<number> {
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  const api = kc.makeApiClient(CustomObjectsApi);
  const started = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      await api.createNamespacedCustomObject({
        group: widgetResource.group,
        version: widgetResource.version,
        plural: widgetResource.plural,
        namespace,
        body: { apiVersion: 'test.konductor.dev/v1', kind: 'Widget', metadata: { name: `w-${i}` }, spec: { size: i, color: 'blue' } },
      });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  return (performance.now() - started) / 1000;
}
