import { ApiError, silentLogger, type ApiClient } from 'konductor';
import type { ConfigKind, Verdict } from '../../../src/handlers/prometheus/acceptance.js';
import {
  AcceptanceWriter,
  type ConfigObject,
  type ConfigObjects,
  type Publication,
} from '../../../src/handlers/prometheus/acceptance-writer.js';
import { fakeApiClient } from './fake-api-client.js';
import { type RequestInit } from '../../../src/framework/api/api-client.js';

const main = { namespace: 'monitoring', name: 'main' };
const other = { namespace: 'monitoring', name: 'other' };
const yes: Verdict = { accepted: true, reason: 'Accepted', message: 'in the configuration' };

function object(kind: ConfigKind, name: string): ConfigObject {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind,
    metadata: { namespace: 'monitoring', name, uid: `uid-${name}`, generation: 1 },
  };
}

const web = object('ServiceMonitor', 'web');
const pods = object('PodMonitor', 'pods');
const rules = object('PrometheusRule', 'rules');
const objects: ConfigObjects = {
  ServiceMonitor: [web],
  PodMonitor: [pods],
  PrometheusRule: [rules],
};
const all = new Map<string, Verdict>([
  ['ServiceMonitor/monitoring/web', yes],
  ['PodMonitor/monitoring/pods', yes],
  ['PrometheusRule/monitoring/rules', yes],
]);
/** The cache as the render saw it: the echo of a write never arrives in these specs. */
const current = (kind: ConfigKind, _namespace: string, name: string): ConfigObject | undefined =>
  objects[kind].find((o) => o.metadata?.name === name);

/** A client that records status writes and answers each with `answer(path)` (the patched body by default). */
function recording(answer: (path: string) => unknown = () => ({})) {
  const writes: Array<{ path: string; body: unknown }> = [];
  const client = fakeApiClient(async (method: string, path: string, init?: RequestInit) => {
    if (method !== 'PATCH') throw new Error(`unexpected ${method} ${path}`);
    writes.push({ path, body: init?.body });
    const result = answer(path);
    if (result instanceof Error) throw result;
    return result;
  });
  return { client, writes };
}

function names(writes: Array<{ path: string }>): string[] {
  return writes.map((w) =>
    w.path.replace('/apis/monitoring.coreos.com/v1/namespaces/monitoring/', ''),
  );
}

const noRefusal = (): void => {
  throw new Error('nothing should be refused');
};

/** Main's verdicts on every object, written through `client`, with `changes` made. */
function publication(client: ApiClient, changes: Partial<Publication> = {}): Publication {
  return {
    client,
    prometheus: main,
    objects,
    verdicts: all,
    current,
    refused: noRefusal,
    logger: silentLogger(),
    ...changes,
  };
}

describe('acceptance writer', () => {
  it("writes each object's status once, and nothing when the verdicts repeat before the echo arrives", async () => {
    const { client, writes } = recording();
    const writer = new AcceptanceWriter();
    await writer.publish(publication(client));
    expect(names(writes)).toEqual([
      'servicemonitors/web/status',
      'podmonitors/pods/status',
      'prometheusrules/rules/status',
    ]);
    await writer.publish(publication(client));
    expect(writes).toHaveLength(3);
  });

  it("builds on its own write, so a second Prometheus's binding is added beside the first", async () => {
    const { client, writes } = recording();
    const writer = new AcceptanceWriter();
    const justWeb = new Map([['ServiceMonitor/monitoring/web', yes]]);
    await Promise.all([
      writer.publish(publication(client, { verdicts: justWeb })),
      writer.publish(publication(client, { prometheus: other, verdicts: justWeb })),
    ]);
    const last = writes.at(-1)?.body as { status: { bindings: Array<{ name: string }> } };
    expect(last.status.bindings.map((binding) => binding.name)).toEqual(['main', 'other']);
  });

  it('reports a refused kind once through its callback, skips the rest of that kind, and writes the others', async () => {
    const { client, writes } = recording((path) =>
      path.includes('/servicemonitors/') ? new ApiError(403, 'forbidden', 'Forbidden') : {},
    );
    const refused: string[] = [];
    const twoMonitors: ConfigObjects = {
      ...objects,
      ServiceMonitor: [web, object('ServiceMonitor', 'api')],
    };
    const verdicts = new Map([...all, ['ServiceMonitor/monitoring/api', yes]]);
    const lookup = (kind: ConfigKind, _namespace: string, name: string): ConfigObject | undefined =>
      twoMonitors[kind].find((o) => o.metadata?.name === name);
    await new AcceptanceWriter().publish(
      publication(client, {
        objects: twoMonitors,
        verdicts,
        current: lookup,
        refused: (kind, message) => refused.push(`${kind}: ${message}`),
      }),
    );
    expect(refused).toHaveLength(1);
    expect(refused[0]).toContain('grant it patch on servicemonitors/status');
    expect(names(writes)).toEqual([
      'servicemonitors/web/status',
      'podmonitors/pods/status',
      'prometheusrules/rules/status',
    ]);
  });

  it('skips an object deleted meanwhile, and one the cache no longer holds', async () => {
    const { client, writes } = recording((path) =>
      path.includes('/podmonitors/') ? new ApiError(404, 'not found', 'NotFound') : {},
    );
    const gone = (kind: ConfigKind, namespace: string, name: string): ConfigObject | undefined =>
      kind === 'PrometheusRule' ? undefined : current(kind, namespace, name);
    await expect(
      new AcceptanceWriter().publish(publication(client, { current: gone })),
    ).resolves.toBeUndefined();
    expect(names(writes)).toEqual(['servicemonitors/web/status', 'podmonitors/pods/status']);
  });

  it('tries every object before throwing what failed, so the render is retried', async () => {
    const { client, writes } = recording((path) =>
      path.includes('/servicemonitors/') ? new ApiError(500, 'etcd timeout', 'InternalError') : {},
    );
    const publishing = new AcceptanceWriter().publish(publication(client));
    await expect(publishing).rejects.toThrow(
      /Prometheus monitoring\/main: 1 status writes .* failed \(first: ServiceMonitor monitoring\/web: etcd timeout\)/,
    );
    expect(writes).toHaveLength(3);
  });
});
