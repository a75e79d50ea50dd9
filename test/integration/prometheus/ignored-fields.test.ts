// Upstream fields the operator does not act on: the CRDs keep them on the stored object, and the
// operator says so in exactly one Warning Event per object and spec generation.
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/index.js';
import {
  IGNORED_FIELDS_REASON,
  PrometheusIgnoredFields,
} from '../../../src/handlers/prometheus/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { uniqueNamespace } from '../../support/cluster.js';
import { monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';

const API = 'monitoring.coreos.com/v1';

interface EventView {
  type: string;
  reason: string;
  message: string;
  involvedObject: { kind: string; name: string };
}

interface Stored {
  metadata: { generation?: number };
  spec: Record<string, unknown> & { endpoints?: Array<Record<string, unknown>> };
}

let kc: KubeConfig;
let api: ApiClient;
let namespace: string;
let running: TestOperator;

const start = (): Promise<TestOperator> =>
  runOperator({ kubeConfig: kc, handlers: [PrometheusIgnoredFields], namespaces: [namespace] });

beforeAll(async () => {
  ({ kc } = await monitoringPlane());
  api = new ApiClient(kc);
  namespace = await uniqueNamespace(kc, 'ignored-fields');
  running = await start();
}, 60_000);
afterAll(async () => {
  await running?.stop();
});

const path = (plural: string, name = ''): string =>
  `/apis/${API}/namespaces/${namespace}/${plural}${name ? `/${name}` : ''}`;

async function create(
  plural: string,
  kind: string,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await api.request('POST', path(plural), {
    body: { apiVersion: API, kind, metadata: { name }, spec },
  });
}

async function mergePatch(
  plural: string,
  name: string,
  body: Record<string, unknown>,
): Promise<void> {
  await api.request('PATCH', path(plural, name), {
    body,
    contentType: 'application/merge-patch+json',
  });
}

function read(plural: string, name: string): Promise<Stored> {
  return api.request<Stored>('GET', path(plural, name));
}

/** The IgnoredFields Events about the object of `kind` named `name`. */
async function ignoredFieldEvents(kind: string, name: string): Promise<EventView[]> {
  const list = await api.request<{ items: EventView[] }>(
    'GET',
    `/api/v1/namespaces/${namespace}/events`,
    { query: { fieldSelector: `involvedObject.name=${name}` } },
  );
  return list.items.filter(
    (e) => e.involvedObject.kind === kind && e.reason === IGNORED_FIELDS_REASON,
  );
}

/** The IgnoredFields Events once one names `generation`: a later generation's Event is the barrier that shows earlier ones are all posted. */
async function eventsThrough(kind: string, name: string, generation: number): Promise<EventView[]> {
  let events: EventView[] = [];
  await waitFor(
    async () => {
      events = await ignoredFieldEvents(kind, name);
      return events.some((e) => e.message.includes(`(generation ${generation})`));
    },
    {
      what: `an ${IGNORED_FIELDS_REASON} Event about ${kind} ${name} for generation ${generation}`,
      timeoutMs: 30_000,
    },
  );
  return events;
}

const generations = (events: EventView[]): string[] =>
  events.map((e) => /\(generation (\d+)\)/.exec(e.message)?.[1] ?? '?').sort();

// One Prometheus through its life: each step builds on the one before.
describe("a Prometheus as in upstream's getting-started guide, with enableAdminAPI: true", () => {
  const name = 'getting-started';
  const spec = {
    serviceAccountName: 'prometheus',
    serviceMonitorSelector: { matchLabels: { team: 'frontend' } },
    resources: { requests: { memory: '400Mi' } },
    enableAdminAPI: true,
  };

  test('is stored with enableAdminAPI, not pruned', async () => {
    await create('prometheuses', 'Prometheus', name, spec);
    expect((await read('prometheuses', name)).spec.enableAdminAPI).toBe(true);
  });

  test('gets one Warning Event IgnoredFields naming spec.enableAdminAPI', async () => {
    const events = await eventsThrough('Prometheus', name, 1);
    expect(events).toHaveLength(1);
    expect(events[0]!.type).toBe('Warning');
    expect(events[0]!.message).toContain('spec.enableAdminAPI');
    expect(events[0]!.message).not.toContain('serviceAccountName');
  });

  test('a label change posts no Event; the next spec change posts one for its generation, naming the fields it sets', async () => {
    await mergePatch('prometheuses', name, { metadata: { labels: { team: 'frontend' } } });
    await mergePatch('prometheuses', name, { spec: { enableRemoteWriteReceiver: true } });
    const events = await eventsThrough('Prometheus', name, 2);
    expect(generations(events)).toEqual(['1', '2']);
    const second = events.find((e) => e.message.includes('(generation 2)'))!;
    expect(second.message).toContain('spec.enableAdminAPI, spec.enableRemoteWriteReceiver');
  });

  test('an operator restart posts no Event again', async () => {
    await running.stop();
    running = await start();
    await mergePatch('prometheuses', name, { spec: { replicas: 2 } });
    expect(generations(await eventsThrough('Prometheus', name, 3))).toEqual(['1', '2', '3']);
  });
});

describe('a ServiceMonitor endpoint with a field the operator ignores', () => {
  const name = 'web-tls';

  beforeAll(async () => {
    await create('servicemonitors', 'ServiceMonitor', name, {
      selector: { matchLabels: { app: 'web' } },
      endpoints: [{ port: 'web' }, { port: 'admin', bearerTokenFile: '/var/run/secrets/token' }],
    });
  });

  test('is stored with the field, not pruned', async () => {
    expect((await read('servicemonitors', name)).spec.endpoints?.[1]?.bearerTokenFile).toBe(
      '/var/run/secrets/token',
    );
  });

  test('gets one Warning Event naming spec.endpoints[1].bearerTokenFile', async () => {
    const events = await eventsThrough('ServiceMonitor', name, 1);
    expect(events).toHaveLength(1);
    expect(events[0]!.message).toContain('spec.endpoints[1].bearerTokenFile');
  });
});

test('a ServiceMonitor of supported fields gets no Event until a spec change adds an ignored one', async () => {
  const name = 'web-plain';
  await create('servicemonitors', 'ServiceMonitor', name, {
    selector: { matchLabels: { app: 'web' } },
    endpoints: [{ port: 'web', honorTimestamps: false }],
  });
  await mergePatch('servicemonitors', name, { spec: { sampleLimit: 1000 } });
  const events = await eventsThrough('ServiceMonitor', name, 2);
  expect(generations(events)).toEqual(['2']);
  expect(events[0]!.message).toContain('spec.sampleLimit');
});
