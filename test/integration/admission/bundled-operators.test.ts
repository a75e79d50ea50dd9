import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/index.js';
import { EtcdAdmission } from '../../../src/handlers/etcd/index.js';
import { PrometheusAdmission } from '../../../src/handlers/prometheus/index.js';
import {
  installCrds,
  readCrds,
  runOperator,
  waitFor,
  type TestOperator,
} from '../../../src/testing/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { installEtcdCrds, ETCD_API } from '../../support/etcd.js';
import { kubectlApply } from '../../support/kubectl.js';

/**
 * The bundled operators' admission: what they would only report after the fact (an Event, a status
 * condition) is refused at `kubectl apply` instead, with a message naming the field or the reason.
 */
const monitoringCrds = fileURLToPath(
  new URL('../../../crds/monitoring.coreos.com.yaml', import.meta.url),
);

let kc: KubeConfig;
let api: ApiClient;
let namespace = '';
let identity = '';
let running: TestOperator | undefined;

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installCrds(kc, readCrds(monitoringCrds));
  await installEtcdCrds(kc);
  api = new ApiClient(kc);
  namespace = await uniqueNamespace(kc, 'adm-bundled');
  identity = `bnd-${randomBytes(4).toString('hex')}.konductor.dev`;
  running = await runOperator({
    kubeConfig: kc,
    handlers: [PrometheusAdmission, EtcdAdmission],
    namespaces: [namespace],
    identity,
    webhooks: { port: 0, url: 'https://127.0.0.1' },
  });
  // The API server picks up a new configuration shortly after it is written.
  await waitFor(
    async () =>
      (await kubectlApply(cluster('probe', 1, '3.4.23', RESERVED_LABEL), ['--dry-run=server']))
        .code !== 0,
    { what: 'the API server to call the new webhooks' },
  );
});

afterAll(async () => {
  await running?.stop();
  if (identity)
    await api
      .resource('admissionregistration.k8s.io/v1', 'validatingwebhookconfigurations')
      .delete({ name: identity });
  api?.close();
});

function serviceMonitor(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { namespace, name },
    spec: { selector: {}, endpoints: [{ port: 'metrics' }], ...spec },
  };
}

function cluster(
  name: string,
  size: number,
  version = '3.4.23',
  pod?: Record<string, unknown>,
): Record<string, unknown> {
  return {
    apiVersion: ETCD_API,
    kind: 'EtcdCluster',
    metadata: { namespace, name },
    spec: { size, version, ...(pod ? { pod } : {}) },
  };
}

/** A cluster whose Pod labels take the operator's own selector label: the CRD schema allows it, the operator cannot. */
const RESERVED_LABEL = { labels: { app: 'mine' } };

describe('the Prometheus operator at kubectl apply', () => {
  test('a ServiceMonitor with a regex RE2 rejects is refused, naming the field', async () => {
    const run = await kubectlApply(
      serviceMonitor('lookahead', {
        endpoints: [
          {
            port: 'metrics',
            relabelings: [{ sourceLabels: ['job'], regex: '(?=api).*', action: 'keep' }],
          },
        ],
      }),
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('spec.endpoints[0].relabelings[0].regex');
  });

  test('a ServiceMonitor with an invalid selector value is refused, naming the field', async () => {
    const run = await kubectlApply(
      serviceMonitor('bad-selector', { selector: { matchLabels: { app: 'not a label value!' } } }),
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('spec.selector.matchLabels');
  });

  test('a usable ServiceMonitor is stored', async () => {
    expect((await kubectlApply(serviceMonitor('fine', {}))).code).toBe(0);
  });
});

describe('the etcd operator at kubectl apply', () => {
  test('a version change that skips a minor version is refused with the reason', async () => {
    expect((await kubectlApply(cluster('jump', 1, '3.3.27'))).code).toBe(0);
    const run = await kubectlApply(cluster('jump', 1, '3.5.9'));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('etcd upgrades one minor version at a time: set 3.4.x first');
  });

  test('a spec the operator could not run is refused with the reason', async () => {
    const run = await kubectlApply(cluster('selector-clash', 1, '3.4.23', RESERVED_LABEL));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      "spec.pod.labels.app is reserved for the operator's own selectors",
    );
  });

  test('adding TLS to a cluster whose members run without it is refused with what to do instead', async () => {
    expect((await kubectlApply(cluster('plain', 1))).code).toBe(0);
    await runningTLSMode('plain', 'none');
    const withTLS = cluster('plain', 1);
    (withTLS.spec as Record<string, unknown>).TLS = {
      static: { member: { peerSecret: 'p', serverSecret: 's' }, operatorSecret: 'o' },
    };
    const run = await kubectlApply(withTLS);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('a running cluster cannot change this');
    expect(run.stderr).toContain('restore a backup into a new cluster with the TLS you want');
  });

  test('a spec.TLS written while the members run without it (as when the operator ignored the field) may be removed', async () => {
    const withTLS = cluster('legacy', 1);
    (withTLS.spec as Record<string, unknown>).TLS = { static: { member: { peerSecret: 'p' } } };
    expect((await kubectlApply(withTLS)).code).toBe(0);
    await runningTLSMode('legacy', 'none');
    expect((await kubectlApply(cluster('legacy', 1))).code).toBe(0);
  });
});

/** Records in status the TLS mode the cluster's members run with, as the operator does. */
async function runningTLSMode(name: string, mode: string): Promise<void> {
  await api.request(
    'PATCH',
    `/apis/${ETCD_API}/namespaces/${namespace}/etcdclusters/${name}/status`,
    { body: { status: { tlsMode: mode } }, contentType: 'application/merge-patch+json' },
  );
}
