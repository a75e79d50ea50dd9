/**
 * Issue 14 security review, point 2: every namespace and name the Prometheus operator puts into an
 * API path is encoded, so a value with `/` or `..` stays one segment and never reaches another
 * namespace's objects.
 */
import { ApiError, silentLogger, type ApiClient, type ChangeContext, type EventContext, type KubeObject } from 'konductor';
import { corePath, monitoringPath, statefulSetPath } from '../../../src/handlers/prometheus/api-paths.js';
import { PrometheusOperator } from '../../../src/handlers/prometheus/operator.js';
import { readInputs, reconcile, removeChildren, type PrometheusStatus } from '../../../src/handlers/prometheus/reconcile.js';
import type { PrometheusResource, PrometheusSpec } from '../../../src/handlers/prometheus/types.js';

const HOSTILE = 'evil/../../victim';
const ENCODED = 'evil%2F..%2F..%2Fvictim';
const options = { configReloaderImage: 'quay.io/example/prometheus-config-reloader:v1' };

type Prometheus = PrometheusResource & KubeObject;

function prometheusObject(namespace: string, name: string): Prometheus {
  return { apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { namespace, name, uid: 'uid-1' }, spec: { serviceMonitorSelector: {} } };
}

/** Records every request; GETs answer `objects` by path (404 otherwise), lists answer empty, writes echo their body. */
function recordingClient(objects: Record<string, unknown> = {}): { client: ApiClient; requests: string[] } {
  const requests: string[] = [];
  const client = {
    request: async (method: string, path: string, init?: { body?: unknown }) => {
      requests.push(`${method} ${path}`);
      if (method !== 'GET') return init?.body ?? {};
      if (path in objects) return structuredClone(objects[path]);
      if (/\/(servicemonitors|prometheuses|namespaces)$/.test(path)) return { items: [] };
      throw new ApiError(404, `GET ${path}: 404 not found`, 'NotFound');
    },
  } as unknown as ApiClient;
  return { client, requests };
}

describe('API path helpers', () => {
  it('encode a namespace and a name with / and .. as single segments', () => {
    expect(monitoringPath('team/a', 'prometheuses', HOSTILE, 'status')).toBe(`/apis/monitoring.coreos.com/v1/namespaces/team%2Fa/prometheuses/${ENCODED}/status`);
    expect(monitoringPath('../kube-system', 'servicemonitors')).toBe('/apis/monitoring.coreos.com/v1/namespaces/..%2Fkube-system/servicemonitors');
    expect(corePath('team-a', 'secrets', `prometheus-${HOSTILE}`)).toBe(`/api/v1/namespaces/team-a/secrets/prometheus-${ENCODED}`);
    expect(statefulSetPath('team-a', '?watch=1#x')).toBe('/apis/apps/v1/namespaces/team-a/statefulsets/%3Fwatch%3D1%23x');
  });

  it.each(['..', '.', ''])('refuse %j as a segment, which no encoding keeps from being resolved or dropped', (value) => {
    expect(() => corePath(value, 'secrets')).toThrow('cannot be a namespace or name in an API path');
    expect(() => monitoringPath('team-a', 'prometheuses', value)).toThrow('cannot be a namespace or name in an API path');
  });
});

describe('the operator encodes what it takes from objects', () => {
  it('reconcile reads and writes the children of a Prometheus named with / and .. inside its own namespace only', async () => {
    const { client, requests } = recordingClient();
    await reconcile(client, prometheusObject('team-a', HOSTILE), { monitors: [], podMonitors: [], rules: [], namespaces: [], allNamespaces: false }, silentLogger(), options);
    expect(requests).toEqual([
      `GET /api/v1/namespaces/team-a/secrets/prometheus-${ENCODED}`,
      'POST /api/v1/namespaces/team-a/secrets',
      'GET /api/v1/namespaces/team-a/services/prometheus-operated',
      'POST /api/v1/namespaces/team-a/services',
      `GET /apis/apps/v1/namespaces/team-a/statefulsets/prometheus-${ENCODED}`,
      'POST /apis/apps/v1/namespaces/team-a/statefulsets',
      // Rule ConfigMaps left from an earlier ruleSelector are looked for (none here).
      `GET /api/v1/namespaces/team-a/configmaps/prometheus-${ENCODED}-rulefiles-0`,
    ]);
  });

  it('removeChildren deletes only the encoded paths', async () => {
    const { client, requests } = recordingClient();
    await removeChildren(client, prometheusObject('team-a', HOSTILE));
    expect(requests.filter((r) => r.startsWith('DELETE'))).toEqual([
      `DELETE /apis/apps/v1/namespaces/team-a/statefulsets/prometheus-${ENCODED}`,
      `DELETE /api/v1/namespaces/team-a/secrets/prometheus-${ENCODED}`,
      'DELETE /api/v1/namespaces/team-a/services/prometheus-operated',
    ]);
  });

  it('readInputs lists ServiceMonitors, PodMonitors and PrometheusRules of an encoded namespace', async () => {
    const { client, requests } = recordingClient();
    await readInputs(client, [{ namespace: 'team/../a', ownNamespaceOnly: true }]);
    expect(requests.sort()).toEqual([
      'GET /apis/monitoring.coreos.com/v1/namespaces/team%2F..%2Fa/podmonitors',
      'GET /apis/monitoring.coreos.com/v1/namespaces/team%2F..%2Fa/prometheusrules',
      'GET /apis/monitoring.coreos.com/v1/namespaces/team%2F..%2Fa/servicemonitors',
    ]);
  });

  it('the rule ConfigMaps of a Prometheus named with / and .. are written and probed at encoded paths', async () => {
    const { client, requests } = recordingClient();
    const prometheus = { ...prometheusObject('team-a', HOSTILE), spec: { serviceMonitorSelector: {}, ruleSelector: {} } };
    await reconcile(client, prometheus, { monitors: [], podMonitors: [], rules: [], namespaces: [], allNamespaces: false }, silentLogger(), options);
    expect(requests.filter((r) => r.includes('/configmaps'))).toEqual([
      `GET /api/v1/namespaces/team-a/configmaps/prometheus-${ENCODED}-rulefiles-0`,
      'POST /api/v1/namespaces/team-a/configmaps',
      `GET /api/v1/namespaces/team-a/configmaps/prometheus-${ENCODED}-rulefiles-1`,
    ]);
  });

  it('a re-render after a ServiceMonitor change reads and patches the Prometheus at its encoded path', async () => {
    const prometheus = prometheusObject('team-a', HOSTILE);
    const path = `/apis/monitoring.coreos.com/v1/namespaces/team-a/prometheuses/${ENCODED}`;
    const { client, requests } = recordingClient({ [path]: prometheus });
    const operator = new PrometheusOperator(options);
    const context = { body: prometheus, client, logger: silentLogger(), patch: { status: {} } } as unknown as ChangeContext<PrometheusSpec, PrometheusStatus>;
    await operator.created(context);
    requests.length = 0;

    await operator.monitorChanged({ client, logger: silentLogger() } as unknown as EventContext);
    expect(requests.filter((r) => r.includes('/prometheuses/'))).toEqual([`GET ${path}`, `PATCH ${path}/status`]);
  });
});
