import { ResourceClient, type ApiClient, type Cache, type KubeObject } from 'konductor';
import { type RequestInit } from '../../../src/framework/api/api-client.js';

/** The discovery answers of the group versions the Prometheus operator uses. */
const DISCOVERY: Record<
  string,
  { resources: Array<{ name: string; kind: string; namespaced: boolean }> }
> = {
  '/api/v1': {
    resources: [
      { name: 'secrets', kind: 'Secret', namespaced: true },
      { name: 'services', kind: 'Service', namespaced: true },
      { name: 'configmaps', kind: 'ConfigMap', namespaced: true },
      { name: 'namespaces', kind: 'Namespace', namespaced: false },
    ],
  },
  '/apis/apps/v1': { resources: [{ name: 'statefulsets', kind: 'StatefulSet', namespaced: true }] },
  '/apis/monitoring.coreos.com/v1': {
    resources: [
      { name: 'prometheuses', kind: 'Prometheus', namespaced: true },
      { name: 'prometheuses/status', kind: 'Prometheus', namespaced: true },
      { name: 'servicemonitors', kind: 'ServiceMonitor', namespaced: true },
      { name: 'podmonitors', kind: 'PodMonitor', namespaced: true },
      { name: 'prometheusrules', kind: 'PrometheusRule', namespaced: true },
      { name: 'servicemonitors/status', kind: 'ServiceMonitor', namespaced: true },
      { name: 'podmonitors/status', kind: 'PodMonitor', namespaced: true },
      { name: 'prometheusrules/status', kind: 'PrometheusRule', namespaced: true },
    ],
  },
};

/**
 * An ApiClient over `request` for the operator's requests, with `resource()` as the real client has
 * it; discovery is answered here, so `request` sees only the operator's own reads and writes.
 */
export function fakeApiClient(
  request: (method: string, path: string, init?: RequestInit) => Promise<unknown>,
): ApiClient {
  const client = {
    request: async (method: string, path: string, init?: RequestInit) =>
      method === 'GET' && path in DISCOVERY
        ? structuredClone(DISCOVERY[path])
        : request(method, path, init),
    resource: (apiVersion: string, name: string) =>
      new ResourceClient(client as unknown as ApiClient, apiVersion, name),
  };
  return client as unknown as ApiClient;
}

/** A read cache holding `objects` by `<apiVersion> <plural>`; other watched kinds read as empty. */
export function fakeCache(objects: Record<string, KubeObject[]> = {}): Cache {
  return {
    resource: <T>(apiVersion: string, name: string) => {
      const items = (objects[`${apiVersion} ${name}`] ?? []) as unknown as T[];
      return {
        get: ({ namespace, name: objectName }: { namespace?: string; name: string }) =>
          items.find(
            (item) =>
              (item as KubeObject).metadata?.name === objectName &&
              (item as KubeObject).metadata?.namespace === namespace,
          ),
        list: (query: { namespace?: string } = {}) =>
          items.filter(
            (item) =>
              query.namespace === undefined ||
              (item as KubeObject).metadata?.namespace === query.namespace,
          ),
      };
    },
  } as unknown as Cache;
}
