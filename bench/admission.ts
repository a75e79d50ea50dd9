// Scenario "admission": what an admission webhook adds to a write. Server-side dry-run creates
// (`dryRun=All`: admitted and validated in full, nothing stored) go to the API server at a fixed rate,
// open loop, first in a namespace no webhook covers (the baseline), then in one where a Konductor
// operator validates and mutates every create through its HTTPS webhook server. The figures are each
// phase's request latency percentiles and the difference: the latency the webhooks add.
// The operator runs in this process from the TypeScript sources (its decorators and registry must be
// the same module instance as the handler class below).
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AdmissionError,
  ApiClient,
  createOperator,
  on,
  silentLogger,
  type AdmissionContext,
  type MutationContext,
} from '../src/framework/index.js';
import {
  benchApiVersion,
  collection,
  createNamespace,
  installBenchCrd,
  latencyFigures,
  machine,
  percentile,
  round1,
  type BenchTarget,
  type Figures,
} from './support.js';

export interface AdmissionOptions {
  /** Requests per second. */
  rate: number;
  seconds: number;
  namespace: string;
}

class BenchAdmission {
  @on.validate(benchApiVersion, 'benchobjects', { id: 'bench-validate' })
  validate({ spec }: AdmissionContext): void {
    if (typeof spec.idx !== 'number') throw new AdmissionError('spec.idx must be a number');
  }

  @on.mutate(benchApiVersion, 'benchobjects', { id: 'bench-mutate' })
  mutate({ patch }: MutationContext): void {
    patch.metadata.labels = { admitted: 'yes' };
  }
}

/** Dry-run creates at `rate` per second for `seconds`, open loop; the latency of each and the failures. */
async function load(
  client: ApiClient,
  namespace: string,
  rate: number,
  seconds: number,
): Promise<{ latencies: number[]; failures: string[] }> {
  const latencies: number[] = [];
  const failures: string[] = [];
  const pending: Promise<void>[] = [];
  const started = performance.now();
  const total = Math.round(rate * seconds);
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const sent = performance.now();
    const body = {
      apiVersion: benchApiVersion,
      kind: 'BenchObject',
      metadata: { name: `a-${i}` },
      spec: { idx: i },
    };
    pending.push(
      client.request('POST', collection(namespace), { body, query: { dryRun: 'All' } }).then(
        () => void latencies.push(performance.now() - sent),
        (error: unknown) =>
          void failures.push(error instanceof Error ? error.message : String(error)),
      ),
    );
  }
  await Promise.all(pending);
  return { latencies, failures };
}

export async function runAdmission(
  target: BenchTarget,
  options: AdmissionOptions,
): Promise<Figures> {
  const { rate, seconds } = options;
  await installBenchCrd(target.kubeConfig);
  const baselineNamespace = `${options.namespace}-baseline`;
  const webhookNamespace = `${options.namespace}-webhooks`;
  await createNamespace(target.kubeConfig, baselineNamespace);
  const client = new ApiClient(target.kubeConfig, { maxSockets: 64 });
  // Labelled as API servers from 1.21 label every namespace (this 1.20 one does not): the webhooks select it by it.
  const labels = { 'kubernetes.io/metadata.name': webhookNamespace };
  await client.request('POST', '/api/v1/namespaces', {
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: webhookNamespace, labels } },
  });
  const operator = createOperator({
    kubeConfig: target.kubeConfig,
    handlers: [BenchAdmission],
    namespaces: [webhookNamespace],
    identity: 'bench-admission.konductor.dev',
    logger: silentLogger(),
    webhooks: { port: 0, url: 'https://127.0.0.1' },
  }).start();
  try {
    await operator.ready;
    // The API server picks up a new configuration shortly after it is written: until a create comes back labelled.
    for (let i = 0; ; i++) {
      const body = {
        apiVersion: benchApiVersion,
        kind: 'BenchObject',
        metadata: { name: `probe-${i}` },
        spec: { idx: i },
      };
      const answer = await client.request<{ metadata?: { labels?: Record<string, string> } }>(
        'POST',
        collection(webhookNamespace),
        { body, query: { dryRun: 'All' } },
      );
      if (answer.metadata?.labels?.admitted === 'yes') break;
      if (i > 200) throw new Error('the API server did not call the webhooks within 20 s');
      await sleep(100);
    }
    const baseline = await load(client, baselineNamespace, rate, seconds);
    const webhooks = await load(client, webhookNamespace, rate, seconds);
    return {
      scenario: 'admission',
      rate,
      seconds,
      requests: baseline.latencies.length + webhooks.latencies.length,
      failures: baseline.failures.length + webhooks.failures.length,
      ...(webhooks.failures.length > 0 ? { firstFailure: webhooks.failures[0] } : {}),
      ...latencyFigures('baselineMs', baseline.latencies),
      ...latencyFigures('webhookMs', webhooks.latencies),
      addedP50Ms: round1(percentile(webhooks.latencies, 0.5) - percentile(baseline.latencies, 0.5)),
      addedP99Ms: round1(
        percentile(webhooks.latencies, 0.99) - percentile(baseline.latencies, 0.99),
      ),
      ...machine(),
    };
  } finally {
    await operator.stop(2_000);
    await client
      .request(
        'DELETE',
        '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/bench-admission.konductor.dev',
      )
      .catch(() => undefined);
    await client
      .request(
        'DELETE',
        '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/bench-admission.konductor.dev',
      )
      .catch(() => undefined);
    client.close();
  }
}
