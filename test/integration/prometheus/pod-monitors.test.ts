/**
 * PodMonitors on the test control plane: the ones a Prometheus selects by `podMonitorSelector`
 * become `role: pod` jobs in its config Secret, and a PodMonitor change re-renders it.
 */
import { gunzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import type { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';

let kc: KubeConfig;
let running: TestOperator;
let custom: CustomObjectsApi;
let core: CoreV1Api;

beforeAll(async () => {
  ({ kc, custom, core } = await monitoringPlane());
  running = await runOperator({ kubeConfig: kc, handlers: [PrometheusOperator] });
});
afterAll(async () => {
  await running?.stop();
});

interface Job {
  job_name: string;
  kubernetes_sd_configs?: Array<{ role: string; namespaces?: { names: string[] } }>;
}

/** The scrape jobs of a Prometheus's configuration, or undefined before its Secret exists. */
async function jobsOf(namespace: string, name: string): Promise<Job[] | undefined> {
  try {
    const secret = await core.readNamespacedSecret({ namespace, name: `prometheus-${name}` });
    const text = gunzipSync(
      Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64'),
    ).toString('utf8');
    return (yaml.load(text) as { scrape_configs?: Job[] }).scrape_configs ?? [];
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

function podMonitor(
  namespace: string,
  name: string,
  labels: Record<string, string>,
): Promise<unknown> {
  return custom.createNamespacedCustomObject({
    ...group,
    plural: 'podmonitors',
    namespace,
    body: {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PodMonitor',
      metadata: { name, labels },
      spec: {
        selector: { matchLabels: { app: name } },
        podMetricsEndpoints: [{ port: 'metrics' }],
      },
    },
  });
}

describe('PodMonitors selected by a Prometheus', () => {
  test('appear as role: pod jobs in the config Secret; unselected ones do not', async () => {
    const namespace = await uniqueNamespace(kc, 'prom-podmon');
    await custom.createNamespacedCustomObject({
      ...group,
      plural: 'prometheuses',
      namespace,
      body: {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'Prometheus',
        metadata: { name: 'main' },
        spec: { podMonitorSelector: { matchLabels: { team: 'a' } } },
      },
    });
    await waitFor(async () => (await jobsOf(namespace, 'main')) !== undefined, {
      what: 'the config Secret',
    });

    // Created after the Prometheus: only the PodMonitor watch can bring them in.
    await podMonitor(namespace, 'worker', { team: 'a' });
    await podMonitor(namespace, 'other', { team: 'b' });
    const jobs = await waitFor(
      async () => {
        const found = await jobsOf(namespace, 'main');
        return found?.some((j) => j.job_name === `podMonitor/${namespace}/worker/0`)
          ? found
          : undefined;
      },
      {
        what: `the worker PodMonitor's job (now ${JSON.stringify((await jobsOf(namespace, 'main'))?.map((j) => j.job_name))})`,
      },
    );
    expect(jobs?.map((j) => j.job_name)).toEqual([`podMonitor/${namespace}/worker/0`]);
    expect(jobs?.[0]?.kubernetes_sd_configs).toEqual([
      { role: 'pod', namespaces: { names: [namespace] } },
    ]);
  });
});
