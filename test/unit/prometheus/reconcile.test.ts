import { ApiError, silentLogger, type ApiClient, type KubeObject, type RequestInit } from 'konductor';
import { configSecret, INPUT_HASH, statefulSet } from '../../../src/handlers/prometheus/children.js';
import { generateConfig, gzipConfig } from '../../../src/handlers/prometheus/config.js';
import { inputScope, readInputs, reconcile, type Inputs } from '../../../src/handlers/prometheus/reconcile.js';
import type { PrometheusResource } from '../../../src/handlers/prometheus/types.js';

type Prometheus = PrometheusResource & KubeObject;

const options = { configReloaderImage: 'quay.io/example/prometheus-config-reloader:v1' };
const inputs: Inputs = { monitors: [], podMonitors: [], rules: [], namespaces: [{ name: 'monitoring' }], allNamespaces: true };
const SECRET = '/api/v1/namespaces/monitoring/secrets/prometheus-main';
const SERVICE = '/api/v1/namespaces/monitoring/services/prometheus-operated';
const SET = '/apis/apps/v1/namespaces/monitoring/statefulsets/prometheus-main';

function prometheusObject(spec: PrometheusResource['spec'] = { serviceMonitorSelector: {} }): Prometheus {
  return { apiVersion: 'monitoring.coreos.com/v1', kind: 'Prometheus', metadata: { name: 'main', namespace: 'monitoring', uid: 'uid-1' }, spec };
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/**
 * An in-memory API server for the paths reconcile uses, with merge patches. `racer` objects are
 * created by "someone else" the moment the operator POSTs to their collection, so its POST gets 409.
 */
class FakeApi {
  readonly objects = new Map<string, KubeObject>();
  readonly writes: string[] = [];
  readonly racers = new Map<string, KubeObject>();

  readonly client = {
    request: async <T>(method: string, path: string, init: RequestInit = {}): Promise<T> => this.request(method, path, init) as T,
  } as unknown as ApiClient;

  private request(method: string, path: string, init: RequestInit): unknown {
    if (method === 'GET') {
      const found = this.objects.get(path);
      if (found === undefined) throw new ApiError(404, `GET ${path}: 404 not found`, 'NotFound');
      return structuredClone(found);
    }
    this.writes.push(`${method} ${path}`);
    if (method === 'POST') {
      const body = init.body as KubeObject;
      const objectPath = `${path}/${body.metadata?.name}`;
      const racer = this.racers.get(objectPath);
      if (racer !== undefined) {
        this.racers.delete(objectPath);
        this.objects.set(objectPath, racer);
      }
      if (this.objects.has(objectPath)) throw new ApiError(409, `POST ${path}: 409 already exists`, 'AlreadyExists');
      this.objects.set(objectPath, structuredClone(body));
      return body;
    }
    if (method === 'PATCH') {
      const current = this.objects.get(path);
      if (current === undefined) throw new ApiError(404, `PATCH ${path}: 404 not found`, 'NotFound');
      const patched = mergePatch(current, init.body) as KubeObject;
      this.objects.set(path, patched);
      return patched;
    }
    throw new Error(`unexpected ${method} ${path}`);
  }
}

function wantedSecretData(prometheus: Prometheus): unknown {
  return configSecret(prometheus, gzipConfig(generateConfig(prometheus, inputs.monitors, inputs.namespaces).yaml)).data;
}

describe('reconciling one Prometheus', () => {
  it('creates the config Secret, the governing Service and the StatefulSet when none exist', async () => {
    const api = new FakeApi();
    await reconcile(api.client, prometheusObject(), inputs, silentLogger(), options);
    expect(api.writes).toEqual([
      'POST /api/v1/namespaces/monitoring/secrets',
      'POST /api/v1/namespaces/monitoring/services',
      'POST /apis/apps/v1/namespaces/monitoring/statefulsets',
    ]);
  });

  it('a Secret someone else created meanwhile (409 on create) is read and patched to the wanted configuration', async () => {
    const api = new FakeApi();
    const prometheus = prometheusObject();
    api.racers.set(SECRET, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'prometheus-main', namespace: 'monitoring' }, data: { 'prometheus.yaml.gz': 'c3RhbGU=' } });
    await reconcile(api.client, prometheus, inputs, silentLogger(), options);
    expect(api.writes.filter((w) => w.includes('/secrets'))).toEqual(['POST /api/v1/namespaces/monitoring/secrets', `PATCH ${SECRET}`]);
    expect(api.objects.get(SECRET)?.data).toEqual(wantedSecretData(prometheus));
  });

  it('a Secret created meanwhile with the wanted bytes is left as it is', async () => {
    const api = new FakeApi();
    const prometheus = prometheusObject();
    api.racers.set(SECRET, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'prometheus-main' }, data: wantedSecretData(prometheus) });
    await reconcile(api.client, prometheus, inputs, silentLogger(), options);
    expect(api.writes.filter((w) => w.includes('/secrets'))).toEqual(['POST /api/v1/namespaces/monitoring/secrets']);
  });

  it('a StatefulSet created meanwhile from other inputs is patched to this spec; one with the same input hash is not', async () => {
    const prometheus = prometheusObject();
    const stale = statefulSet(prometheusObject({ serviceMonitorSelector: {}, replicas: 3 }), options);
    const api = new FakeApi();
    api.racers.set(SET, stale);
    await reconcile(api.client, prometheus, inputs, silentLogger(), options);
    expect(api.writes.filter((w) => w.includes('/statefulsets'))).toEqual(['POST /apis/apps/v1/namespaces/monitoring/statefulsets', `PATCH ${SET}`]);
    const wanted = statefulSet(prometheus, options);
    expect(api.objects.get(SET)?.metadata?.annotations?.[INPUT_HASH]).toBe(wanted.metadata?.annotations?.[INPUT_HASH]);
    expect((api.objects.get(SET)?.spec as { replicas: number }).replicas).toBe(1);

    const same = new FakeApi();
    same.racers.set(SET, wanted);
    await reconcile(same.client, prometheus, inputs, silentLogger(), options);
    expect(same.writes.filter((w) => w.includes('/statefulsets'))).toEqual(['POST /apis/apps/v1/namespaces/monitoring/statefulsets']);
  });

  it('a governing Service another Prometheus created meanwhile is accepted as it is', async () => {
    const api = new FakeApi();
    api.racers.set(SERVICE, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'prometheus-operated', labels: { 'operated-prometheus': 'true' } },
      spec: { clusterIP: 'None', ports: [{ name: 'web', port: 9090, protocol: 'TCP', targetPort: 'web' }], selector: { 'app.kubernetes.io/name': 'prometheus' } },
    });
    const status = await reconcile(api.client, prometheusObject(), inputs, silentLogger(), options);
    expect(api.writes.filter((w) => w.includes('/services'))).toEqual(['POST /api/v1/namespaces/monitoring/services']);
    expect(status.conditions.find((c) => c.type === 'Reconciled')?.status).toBe('True');
  });

  it('a 409 for an object that is gone again fails naming it, for the next attempt to create it', async () => {
    const api = new FakeApi();
    const gone = {
      request: async (method: string, path: string, init?: RequestInit) => {
        if (method === 'POST' && path.endsWith('/secrets')) throw new ApiError(409, `POST ${path}: 409 already exists`, 'AlreadyExists');
        return api.client.request(method, path, init);
      },
    } as unknown as ApiClient;
    await expect(reconcile(gone, prometheusObject(), inputs, silentLogger(), options)).rejects.toThrow(
      'Secret monitoring/prometheus-main was reported as existing but is gone',
    );
  });

  it('removing serviceAccountName removes it from the StatefulSet, the deprecated serviceAccount too', async () => {
    const api = new FakeApi();
    await reconcile(api.client, prometheusObject({ serviceMonitorSelector: {}, serviceAccountName: 'prometheus' }), inputs, silentLogger(), options);
    // What the API server returns: the deprecated field mirrors the new one.
    const podSpec = () => (api.objects.get(SET)?.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    podSpec().serviceAccount = 'prometheus';
    expect(podSpec().serviceAccountName).toBe('prometheus');

    await reconcile(api.client, prometheusObject(), inputs, silentLogger(), options);
    expect(podSpec()).not.toHaveProperty('serviceAccountName');
    expect(podSpec()).not.toHaveProperty('serviceAccount');
  });
});

describe('readInputs', () => {
  /** Answers every list with one item named for the path, and records what was asked. */
  function recordingClient(): { client: ApiClient; paths: string[] } {
    const paths: string[] = [];
    const client = {
      request: async (_method: string, path: string) => {
        paths.push(path);
        return { items: [{ metadata: { name: path, namespace: 'x' } }] };
      },
    } as unknown as ApiClient;
    return { client, paths };
  }

  it('reads only the own namespaces of Prometheus objects without a namespace selector, so namespaced Roles suffice', async () => {
    const { client, paths } = recordingClient();
    const scopes = [inputScope(prometheusObject()), { namespace: 'team-b', ownNamespaceOnly: true }, inputScope(prometheusObject())];
    const read = await readInputs(client, scopes);
    expect(paths.sort()).toEqual([
      '/apis/monitoring.coreos.com/v1/namespaces/monitoring/servicemonitors',
      '/apis/monitoring.coreos.com/v1/namespaces/team-b/servicemonitors',
    ]);
    expect(read).toMatchObject({ namespaces: [], allNamespaces: false });
    expect(read.monitors).toHaveLength(2);
  });

  it('reads every ServiceMonitor and Namespace once any Prometheus selects other namespaces', async () => {
    const { client, paths } = recordingClient();
    const read = await readInputs(client, [inputScope(prometheusObject()), inputScope(prometheusObject({ serviceMonitorSelector: {}, serviceMonitorNamespaceSelector: {} }))]);
    expect(paths.sort()).toEqual(['/api/v1/namespaces', '/apis/monitoring.coreos.com/v1/servicemonitors']);
    expect(read.allNamespaces).toBe(true);
  });
});
