/**
 * A tenant's own Prometheus selecting every PrometheusRule of its namespace, and PrometheusRules of
 * about 1.3 MiB made of tens of thousands of tiny rules: they are refused for their size without
 * being parsed, with one Event each, while the operator keeps its Lease and keeps rendering the
 * other Prometheus. The longest event-loop block while they arrive is printed.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { gunzipSync } from 'node:zlib';
import yaml from 'js-yaml';
import {
  CoordinationV1Api,
  type CoreV1Api,
  type CustomObjectsApi,
  type KubeConfig,
} from '@kubernetes/client-node';
import { PrometheusOperator } from '../../../src/handlers/prometheus/index.js';
import { MAX_RULE_OBJECT_BYTES } from '../../../src/handlers/prometheus/rule-limits.js';
import { runOperator, type TestOperator } from '../../../src/testing/index.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { monitoringGroup as group, monitoringPlane } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait-for.js';

const LARGE_RULES = 3;
const RULES_PER_OBJECT = 32_000;
const LEASE = 'large-rules';
// Lease timings short enough that a loop blocked for longer than the renew deadline loses the Lease
// within the spec, and long enough that an API server stalled for a few seconds by the rest of the
// suite does not take it (with a 2 s deadline it did, and the operator stopped before its first render).
const ELECTION = { name: LEASE, leaseDuration: 10, renewDeadline: 6, retryPeriod: 1 };

let kc: KubeConfig;
let custom: CustomObjectsApi;
let core: CoreV1Api;
let running: TestOperator | undefined;

beforeAll(async () => {
  ({ kc, custom, core } = await monitoringPlane());
});
afterAll(async () => {
  await running?.stop();
});

function create(
  namespace: string,
  plural: string,
  kind: string,
  name: string,
  spec: Record<string, unknown>,
): Promise<unknown> {
  return custom.createNamespacedCustomObject({
    ...group,
    plural,
    namespace,
    body: { apiVersion: 'monitoring.coreos.com/v1', kind, metadata: { name }, spec },
  });
}

/** Tens of thousands of distinct, valid recording rules: about 1.3 MiB serialized. */
function largeRuleSpec(seed: number): Record<string, unknown> {
  const groups = Array.from({ length: RULES_PER_OBJECT / 1000 }, (_, g) => ({
    name: `g${g}`,
    rules: Array.from({ length: 1000 }, (_, i) => ({
      record: `r${seed}_${g}_${i}`,
      expr: `m${g}_${i} > ${seed}`,
    })),
  }));
  return { groups };
}

async function jobsOf(namespace: string, name: string): Promise<string[]> {
  try {
    const secret = await core.readNamespacedSecret({ namespace, name: `prometheus-${name}` });
    const text = gunzipSync(
      Buffer.from(secret.data?.['prometheus.yaml.gz'] ?? '', 'base64'),
    ).toString('utf8');
    return (
      (yaml.load(text) as { scrape_configs?: Array<{ job_name: string }> }).scrape_configs ?? []
    ).map((job) => job.job_name);
  } catch (error) {
    if (statusOf(error) === 404) return [];
    throw error;
  }
}

async function ruleEvents(
  namespace: string,
): Promise<Array<{ name: string; reason: string; message: string }>> {
  const list = await core.listNamespacedEvent({
    namespace,
    fieldSelector: 'involvedObject.kind=PrometheusRule',
  });
  return list.items.map((e) => ({
    name: e.involvedObject.name ?? '',
    reason: e.reason ?? '',
    message: e.message ?? '',
  }));
}

describe("PrometheusRules of tens of thousands of rules, selected by a tenant's Prometheus", () => {
  test('are refused for their size with one Event each, while the operator keeps its Lease and renders the other Prometheus', async () => {
    const tenant = await uniqueNamespace(kc, 'prom-big-rules');
    const other = await uniqueNamespace(kc, 'prom-big-other');
    const leases = kc.makeApiClient(CoordinationV1Api);
    running = await runOperator({
      kubeConfig: kc,
      handlers: [PrometheusOperator],
      leaderElection: { ...ELECTION, namespace: other, identity: 'large-rules-spec' },
    });
    // An operator that loses its Lease stops for good; every wait below says so at once instead of timing out.
    let lost = false;
    void running.operator.lostLeadership.then(() => (lost = true));
    const leading =
      <T>(probe: () => Promise<T>) =>
      async (): Promise<T> => {
        if (lost)
          throw new Error(
            `the operator lost its Lease ${other}/${LEASE} (renew deadline ${ELECTION.renewDeadline} s) and stopped`,
          );
        return probe();
      };
    await create(tenant, 'prometheuses', 'Prometheus', 'tenant', {
      ruleSelector: {},
      serviceMonitorSelector: {},
    });
    await create(other, 'prometheuses', 'Prometheus', 'shared', { serviceMonitorSelector: {} });
    await waitFor(
      leading(
        async () =>
          (await core
            .readNamespacedSecret({ namespace: other, name: 'prometheus-shared' })
            .catch(() => undefined)) !== undefined,
      ),
      { what: "the shared Prometheus's first render", timeoutMs: 60_000 },
    );

    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    let refused: Array<{ name: string; reason: string; message: string }>;
    try {
      for (let i = 0; i < LARGE_RULES; i++)
        await create(tenant, 'prometheusrules', 'PrometheusRule', `large-${i}`, largeRuleSpec(i));
      refused = (await waitFor(
        leading(async () => {
          const found = (await ruleEvents(tenant)).filter((e) => e.reason === 'RuleTooLarge');
          return found.length >= LARGE_RULES ? found : undefined;
        }),
        {
          what: `a RuleTooLarge Event on each of the ${LARGE_RULES} PrometheusRules`,
          timeoutMs: 60_000,
        },
      )) as Array<{ name: string; reason: string; message: string }>;
      // Still working: a ServiceMonitor created now reaches the other Prometheus's configuration.
      await create(other, 'servicemonitors', 'ServiceMonitor', 'after', {
        selector: {},
        endpoints: [{ port: 'metrics' }],
      });
      await waitFor(
        leading(async () =>
          (await jobsOf(other, 'shared')).includes(`serviceMonitor/${other}/after/0`),
        ),
        {
          what: 'the ServiceMonitor created after the rules in the shared configuration',
          timeoutMs: 30_000,
        },
      );
    } finally {
      delay.disable();
      console.log(
        `longest event-loop block while ${LARGE_RULES} PrometheusRules of ${RULES_PER_OBJECT} rules arrived: ${(delay.max / 1e6).toFixed(0)} ms`,
      );
    }
    expect(refused.map((e) => e.name).sort()).toEqual(['large-0', 'large-1', 'large-2']);
    expect(refused[0]?.message).toContain(
      `larger than the ${MAX_RULE_OBJECT_BYTES} bytes one rule ConfigMap holds`,
    );
    expect(refused[0]?.message).toContain('nothing in it was parsed');
    // Still the leader, still renewing.
    const renewTime = async (): Promise<{ holder?: string; renewed: number }> => {
      const lease = await leases.readNamespacedLease({ namespace: other, name: LEASE });
      return {
        holder: lease.spec?.holderIdentity,
        renewed: new Date(lease.spec?.renewTime ?? 0).getTime(),
      };
    };
    const seen = await renewTime();
    expect(seen.holder).toBe('large-rules-spec');
    await waitFor(async () => (await renewTime()).renewed > seen.renewed, {
      what: 'the operator to renew its Lease again',
    });
    const condition = await waitFor(
      async () => {
        const prometheus = (await custom.getNamespacedCustomObject({
          ...group,
          plural: 'prometheuses',
          namespace: tenant,
          name: 'tenant',
        })) as { status?: { conditions?: Array<{ type: string; message: string }> } };
        const message =
          prometheus.status?.conditions?.find((c) => c.type === 'Reconciled')?.message ?? '';
        return message.includes(`${LARGE_RULES} PrometheusRules refused as too large`)
          ? message
          : undefined;
      },
      { what: "the tenant Prometheus's status to count the refused PrometheusRules" },
    );
    expect(condition).toContain(`${tenant}/large-0`);
  }, 120_000);
});
