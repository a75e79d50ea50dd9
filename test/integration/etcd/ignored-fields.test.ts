// etcd-operator fields the operator does not act on (pod.antiAffinity, pod.persistentVolumeClaimSpec, ...): the CRDs keep them on
// the stored object, and the operator says so in exactly one Warning Event per object and spec generation.
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/index.js';
import { EtcdIgnoredFields, IGNORED_FIELDS_REASON } from '../../../src/handlers/etcd/index.js';
import {
  installCrds,
  readCrds,
  runOperator,
  type TestOperator,
} from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { waitFor } from '../../support/wait-for.js';

const crds = fileURLToPath(new URL('../../../crds/etcd.database.coreos.com.yaml', import.meta.url));
const API = 'etcd.database.coreos.com/v1beta2';

interface EventView {
  type: string;
  reason: string;
  message: string;
  involvedObject: { kind: string; name: string };
}

let kc: KubeConfig;
let api: ApiClient;
let namespace: string;
let running: TestOperator;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installCrds(kc, readCrds(crds));
  api = new ApiClient(kc);
  namespace = await uniqueNamespace(kc, 'etcd-ignored');
  // Only the reporter: no members are started, so the cluster's spec is all this needs.
  running = await runOperator({
    kubeConfig: kc,
    handlers: [EtcdIgnoredFields],
    namespaces: [namespace],
  });
}, 60_000);
afterAll(async () => {
  await running?.stop();
});

const path = (plural: string, name = ''): string =>
  `/apis/${API}/namespaces/${namespace}/${plural}${name ? `/${name}` : ''}`;

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

// One EtcdCluster through its life: each step builds on the one before.
describe('an EtcdCluster setting etcd-operator fields the operator does not act on', () => {
  const name = 'claims';
  const pod = {
    persistentVolumeClaimSpec: {
      storageClassName: 'ssd',
      resources: { requests: { storage: '1Gi' } },
    },
  };
  const TLS = {
    static: {
      member: { peerSecret: 'etcd-peer-tls', serverSecret: 'etcd-server-tls' },
      operatorSecret: 'etcd-client-tls',
    },
  };

  test('is stored with them (and with TLS), not pruned', async () => {
    await api.request('POST', path('etcdclusters'), {
      body: {
        apiVersion: API,
        kind: 'EtcdCluster',
        metadata: { name },
        spec: { size: 3, version: '3.4.23', pod, TLS },
      },
    });
    const stored = await api.request<{ spec: { TLS?: unknown; pod?: unknown } }>(
      'GET',
      path('etcdclusters', name),
    );
    expect(stored.spec.pod).toEqual(pod);
    expect(stored.spec.TLS).toEqual(TLS);
  });

  test('gets one Warning Event IgnoredFields naming the field and what it means, and not TLS, which the operator acts on', async () => {
    const events = await eventsThrough('EtcdCluster', name, 1);
    expect(events).toHaveLength(1);
    expect(events[0]!.type).toBe('Warning');
    expect(events[0]!.message).toContain(
      'spec.pod.persistentVolumeClaimSpec (member data is on an emptyDir volume)',
    );
    expect(events[0]!.message).not.toContain('spec.TLS');
  });

  test('a spec change posts exactly one more, for the new generation, naming what it sets then', async () => {
    await api.request('PATCH', path('etcdclusters', name), {
      body: { spec: { size: 5, pod: { antiAffinity: true } } },
      contentType: 'application/merge-patch+json',
    });
    const events = await eventsThrough('EtcdCluster', name, 2);
    expect(events.map((e) => /\(generation (\d+)\)/.exec(e.message)?.[1]).sort()).toEqual([
      '1',
      '2',
    ]);
    expect(events.find((e) => e.message.includes('(generation 2)'))!.message).toMatch(
      /spec\.pod\.antiAffinity.*spec\.pod\.persistentVolumeClaimSpec/,
    );
  });
});
