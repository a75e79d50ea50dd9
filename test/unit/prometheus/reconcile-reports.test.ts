/**
 * What a render tells about what it left out: one Warning Event per monitor generation and message
 * however many renders follow, and a `Reconciled=False` condition when the API server refuses the
 * configuration Secret.
 */
import { ApiError, silentLogger, type KubeObject } from 'konductor';
import { EventScope } from '../../../src/framework/posting/event-scope.js';
import {
  reconcile,
  ReportedProblems,
  type Inputs,
} from '../../../src/handlers/prometheus/reconcile.js';
import type { PrometheusResource } from '../../../src/handlers/prometheus/types.js';
import { fakeApiClient } from './fake-api-client.js';

type Prometheus = PrometheusResource & KubeObject;

const options = { configReloaderImage: 'quay.io/example/prometheus-config-reloader:v1' };
const prometheus: Prometheus = {
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'Prometheus',
  metadata: { name: 'main', namespace: 'monitoring', uid: 'prom-uid' },
  spec: { serviceMonitorSelector: {} },
};

/** A ServiceMonitor the default 30s interval makes Prometheus skip: its timeout is longer. */
function slowMonitor(name: string, generation = 1): Inputs['monitors'][number] {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name, namespace: 'monitoring', uid: `${name}-uid`, generation },
    spec: { selector: {}, endpoints: [{ port: 'metrics', scrapeTimeout: '1m' }] },
  };
}

/** An API server that stores what is created and answers `secretWrite` to writes of the config Secret. */
function api(secretWrite?: ApiError): ReturnType<typeof fakeApiClient> {
  const objects = new Map<string, unknown>();
  return fakeApiClient(async (method, path, init = {}) => {
    if (method === 'GET') {
      if (!objects.has(path)) throw new ApiError(404, `GET ${path}: 404`, 'NotFound');
      return objects.get(path);
    }
    if (secretWrite !== undefined && path.includes('/secrets')) throw secretWrite;
    const body = init.body as KubeObject;
    if (method === 'POST') objects.set(`${path}/${body.metadata?.name}`, body);
    return body;
  });
}

function capture(): { posted: string[]; scope: EventScope } {
  const posted: string[] = [];
  const scope = new EventScope({
    post: (object, type, reason) => posted.push(`${object.metadata?.name} ${type} ${reason}`),
  });
  scope.activate();
  return { posted, scope };
}

describe('reports of a render', () => {
  it('a skipped ServiceMonitor gets one Warning Event per generation, however many renders follow', async () => {
    const { posted, scope } = capture();
    const client = api();
    const reported = new ReportedProblems();
    const inputs = (generation: number): Inputs => ({
      monitors: [slowMonitor('a', generation), slowMonitor('b')],
      podMonitors: [],
      rules: [],
      namespaces: [{ name: 'monitoring' }],
    });
    await scope.run(async () => {
      for (let render = 0; render < 5; render++)
        await reconcile(client, prometheus, inputs(1), silentLogger(), options, reported);
    });
    expect(posted).toEqual(['a Warning InvalidConfiguration', 'b Warning InvalidConfiguration']);

    await scope.run(() =>
      reconcile(client, prometheus, inputs(2), silentLogger(), options, reported),
    );
    expect(posted).toEqual([
      'a Warning InvalidConfiguration',
      'b Warning InvalidConfiguration',
      'a Warning InvalidConfiguration',
    ]);
  });

  it('a configuration Secret the API server refuses leaves Reconciled=False with the reason, and one Event on the Prometheus', async () => {
    const { posted, scope } = capture();
    const refusal = new ApiError(
      422,
      'Secret "prometheus-main" is invalid: data: Too long: must have at most 1048576 bytes',
      'Invalid',
    );
    const client = api(refusal);
    const reported = new ReportedProblems();
    const inputs: Inputs = {
      monitors: [],
      podMonitors: [],
      rules: [],
      namespaces: [{ name: 'monitoring' }],
    };
    const { status } = await scope.run(async () => {
      await reconcile(client, prometheus, inputs, silentLogger(), options, reported);
      return reconcile(client, prometheus, inputs, silentLogger(), options, reported);
    });
    const reconciled = status.conditions.find((c) => c.type === 'Reconciled');
    expect(reconciled).toMatchObject({ status: 'False', reason: 'ConfigNotWritten' });
    expect(reconciled?.message).toContain(
      'the configuration Secret monitoring/prometheus-main could not be written',
    );
    expect(reconciled?.message).toContain('Too long: must have at most 1048576 bytes');
    expect(posted).toEqual(['main Warning ConfigNotWritten']);
  });

  it.each([
    [503, 'etcd unavailable'],
    [429, 'too many requests'],
  ])('a Secret write answered %i is thrown, to be retried', async (status, message) => {
    const client = api(new ApiError(status, message));
    const inputs: Inputs = {
      monitors: [],
      podMonitors: [],
      rules: [],
      namespaces: [{ name: 'monitoring' }],
    };
    await expect(reconcile(client, prometheus, inputs, silentLogger(), options)).rejects.toThrow(
      message,
    );
  });
});
