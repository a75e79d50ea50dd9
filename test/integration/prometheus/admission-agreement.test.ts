/**
 * Admission and render agree at `kubectl apply`: a ServiceMonitor that the Prometheus selecting it
 * would skip (a scrapeTimeout above its interval) is refused, naming that Prometheus, and so is one
 * with a string longer than render accepts.
 */
import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/index.js';
import { MAX_MONITOR_STRING } from '../../../src/handlers/prometheus/monitor-limits.js';
import { PrometheusAdmission, PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, waitFor, type TestOperator } from '../../../src/testing/index.js';
import { uniqueNamespace } from '../../support/cluster.js';
import { kubectlApply } from '../../support/kubectl.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';

let kc: KubeConfig;
let api: ApiClient;
let namespace = '';
let identity = '';
let running: TestOperator | undefined;

function serviceMonitor(name: string, endpoint: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { namespace, name },
    spec: { selector: {}, endpoints: [{ port: 'metrics', ...endpoint }] },
  };
}

beforeAll(async () => {
  const plane = await monitoringPlane();
  kc = plane.kc;
  api = new ApiClient(kc);
  namespace = await uniqueNamespace(kc, 'prom-agree');
  identity = `agree-${randomBytes(4).toString('hex')}.konductor.dev`;
  running = await runOperator({
    kubeConfig: kc,
    handlers: [PrometheusOperator, PrometheusAdmission],
    namespaces: [namespace],
    identity,
    webhooks: { port: 0, url: 'https://127.0.0.1' },
  });
  await plane.custom.createNamespacedCustomObject({
    ...group,
    plural: 'prometheuses',
    namespace,
    body: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'Prometheus',
      metadata: { name: 'main' },
      spec: { serviceMonitorSelector: {}, scrapeInterval: '30s' },
    },
  });
  // The API server calls a new webhook configuration shortly after it is written.
  await waitFor(
    async () =>
      (
        await kubectlApply(
          serviceMonitor('probe', {
            relabelings: [{ sourceLabels: ['job'], regex: '(?=a)', action: 'keep' }],
          }),
          ['--dry-run=server'],
        )
      ).code !== 0,
    {
      what: 'the API server to call the new webhooks',
    },
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

describe('ServiceMonitors at kubectl apply, with the Prometheus operator running', () => {
  test('one the selecting Prometheus would skip for its scrapeTimeout is refused, naming that Prometheus', async () => {
    const run = await kubectlApply(serviceMonitor('slow', { scrapeTimeout: '1m' }));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      `Prometheus ${namespace}/main, which selects it, would skip it: spec.endpoints[0].scrapeTimeout: 1m is greater than the scrape interval 30s`,
    );
  });

  test("one within the selecting Prometheus's interval is admitted", async () => {
    const run = await kubectlApply(serviceMonitor('fine', { interval: '2m', scrapeTimeout: '1m' }));
    expect(run).toMatchObject({ code: 0 });
  });

  test(`a replacement longer than ${MAX_MONITOR_STRING} characters is refused, naming the field`, async () => {
    const run = await kubectlApply(
      serviceMonitor('long', {
        relabelings: [{ targetLabel: 'x', replacement: 'y'.repeat(MAX_MONITOR_STRING + 1) }],
      }),
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      `spec.endpoints[0].relabelings[0].replacement: longer than the ${MAX_MONITOR_STRING} characters accepted`,
    );
  });
});
