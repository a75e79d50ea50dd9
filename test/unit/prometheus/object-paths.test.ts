/**
 * A namespace or name the
 * Prometheus operator takes from an object can never add a path segment or reach another
 * namespace's objects. A name with `/`, `%` or `..` is refused before any request is made.
 */
import { ApiError, silentLogger, type KubeObject, type ReconcileContext } from 'konductor';
import type { Prometheus as PrometheusKind } from '../../../src/handlers/prometheus/generated/monitoring.coreos.com.js';
import { PrometheusOperator } from '../../../src/handlers/prometheus/operator.js';
import { reconcile, removeChildren } from '../../../src/handlers/prometheus/reconcile.js';
import type { PrometheusResource } from '../../../src/handlers/prometheus/types.js';
import { fakeApiClient, fakeCache } from './fake-api-client.js';

const HOSTILE = 'evil/../../victim';
const options = { configReloaderImage: 'quay.io/example/prometheus-config-reloader:v1' };
const noInputs = { monitors: [], podMonitors: [], rules: [], namespaces: [] };

type Prometheus = PrometheusResource & KubeObject;

function prometheusObject(namespace: string, name: string): Prometheus {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'Prometheus',
    metadata: { namespace, name, uid: 'uid-1' },
    spec: { serviceMonitorSelector: {} },
  };
}

/** Records every request but discovery; GETs answer 404 (nothing exists yet), writes echo their body. */
function recordingClient(): { client: ReturnType<typeof fakeApiClient>; requests: string[] } {
  const requests: string[] = [];
  const client = fakeApiClient(async (method, path, init) => {
    requests.push(`${method} ${path}`);
    if (method !== 'GET') return init?.body ?? {};
    throw new ApiError(404, `GET ${path}: 404 not found`, 'NotFound');
  });
  return { client, requests };
}

describe('the operator refuses names that would leave their path segment', () => {
  it('reconcile of a Prometheus named with / and .. fails naming it, before any request', async () => {
    const { client, requests } = recordingClient();
    await expect(
      reconcile(client, prometheusObject('team-a', HOSTILE), noInputs, silentLogger(), options),
    ).rejects.toThrow('refusing the name');
    expect(requests).toEqual([]);
  });

  it('removeChildren of such a Prometheus deletes nothing', async () => {
    const { client, requests } = recordingClient();
    await expect(
      removeChildren(client, fakeCache(), prometheusObject('team-a', HOSTILE)),
    ).rejects.toThrow('refusing the name');
    expect(requests.filter((r) => r.startsWith('DELETE'))).toEqual([]);
  });

  it('a namespace with / and .. is refused too', async () => {
    const { client, requests } = recordingClient();
    await expect(
      reconcile(client, prometheusObject('team/../a', 'main'), noInputs, silentLogger(), options),
    ).rejects.toThrow('refusing the namespace');
    expect(requests).toEqual([]);
  });
});

describe('a reconcile after a ServiceMonitor change', () => {
  it('reads the Prometheus and its inputs from the cache and hands its status to the framework: no request about Prometheus objects', async () => {
    const prometheus = prometheusObject('team-a', 'main');
    const { client, requests } = recordingClient();
    const cache = fakeCache({ 'monitoring.coreos.com/v1 prometheuses': [prometheus] });
    const operator = new PrometheusOperator(options);
    const patch = { status: {} as Record<string, unknown> };
    const context = {
      body: prometheus,
      cache,
      client,
      logger: silentLogger(),
      patch,
      deleting: false,
    } as unknown as ReconcileContext<PrometheusKind>;

    await operator.reconcile(context);

    expect(requests.filter((r) => r.includes('/prometheuses'))).toEqual([]);
    expect(patch.status.conditions).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: 'Reconciled' })]),
    );
  });
});
