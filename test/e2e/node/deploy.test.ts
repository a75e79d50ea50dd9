import { describe, expect, it } from '@jest/globals';
import { resolve } from 'node:path';
import {
  REPO,
  deployOperator,
  getJson,
  kubectl,
  kubectlOk,
  leaseHolder,
  localNode,
  operatorPods,
  waitFor,
} from '../support/node.js';

type EtcdCluster = { status?: { phase?: string; size?: number; members?: { ready?: string[] } } };
type PodList = {
  items: {
    metadata: { name: string };
    status?: { phase?: string; containerStatuses?: { ready: boolean; image: string }[] };
  }[];
};

describe('the operator deployed with kubectl apply -f deploy/ on a real node', () => {
  it('rolls out: its Pod is Ready within 60 s', async () => {
    const seconds = await deployOperator(60);
    process.stderr.write(`[e2e] deploy/ rolled out in ${seconds.toFixed(1)} s\n`);
    const pods = await operatorPods();
    expect(pods.filter((pod) => pod.ready && !pod.deleting)).toHaveLength(1);
  }, 120_000);

  it('holds its Lease', async () => {
    const [pod] = (await operatorPods()).filter((p) => !p.deleting);
    const holder = await waitFor(
      async () => {
        const current = await leaseHolder();
        return current === pod!.name ? current : undefined;
      },
      { what: `the Lease held by ${pod!.name}`, timeoutMs: 60_000 },
    );
    expect(holder).toBe(pod!.name);
  }, 90_000);

  it('answers /healthz and /metrics from its Pod IP', async () => {
    const [pod] = (await operatorPods()).filter((p) => p.ready && !p.deleting);
    const node = localNode();
    const health = await node.runInNode('curl', [
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      `http://${pod!.ip}:8080/healthz`,
    ]);
    expect(health.stdout).toBe('200');
    const metrics = await node.runInNode('curl', ['-sf', `http://${pod!.ip}:8080/metrics`]);
    expect(metrics.code).toBe(0);
    expect(metrics.stdout).toMatch(/^konductor_/m);
  }, 60_000);

  it("registers its webhook configuration, and the API server calls it: an unsafe EtcdCluster change is refused with the handler's message", async () => {
    await waitFor(
      async () => {
        const list = await getJson<{ items: { webhooks?: unknown[] }[] }>([
          'validatingwebhookconfigurations',
        ]);
        return (list?.items ?? []).some((c) => (c.webhooks ?? []).length > 0);
      },
      { what: 'a ValidatingWebhookConfiguration with webhooks', timeoutMs: 60_000 },
    );
    await kubectlOk(['apply', '-f', '-'], unsafeTarget);
    const refused = await kubectl(
      ['apply', '-f', '-'],
      unsafeTarget.replace('version: 3.4.23', 'version: 3.3.0'),
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      'denied the request: EtcdCluster default/e2e-webhook-target is refused: spec.version: 3.4.23 to 3.3.0 is a downgrade',
    );
    await kubectlOk([
      'delete',
      'etcdcluster',
      'e2e-webhook-target',
      '--wait=true',
      '--timeout=120s',
    ]);
  }, 180_000);

  it('brings examples/etcd.yaml to 3 etcd containers, Running and Ready', async () => {
    await kubectlOk(['apply', '-f', resolve(REPO, 'examples/etcd.yaml')]);
    const started = Date.now();
    await waitFor(
      async () => {
        const cluster = await getJson<EtcdCluster>(['etcdcluster', 'example-etcd-cluster']);
        return cluster?.status?.phase === 'Running' && cluster.status.members?.ready?.length === 3;
      },
      {
        what: 'example-etcd-cluster Running with 3 ready members',
        timeoutMs: 180_000,
        intervalMs: 1_000,
      },
    );
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(`[e2e] examples/etcd.yaml: 3 ready members in ${seconds.toFixed(1)} s\n`);
    // Usually 18–30 s: a slower run prints what the operator did and what the Pods went through.
    if (seconds > 45) {
      const logs = await kubectl(['logs', '-n', 'konductor-system', 'deploy/konductor']);
      const lines = logs.stdout.split('\n').filter((line) => line.includes('example-etcd-cluster'));
      const events = await kubectl([
        'get',
        'events',
        '--sort-by=.lastTimestamp',
        '-o',
        'custom-columns=AT:.lastTimestamp,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message',
      ]);
      process.stderr.write(
        `[e2e] slow formation: the operator's log\n${lines.join('\n')}\n[e2e] events\n${events.stdout}\n`,
      );
    }
    const pods = await getJson<PodList>(['pods', '-l', 'etcd_cluster=example-etcd-cluster']);
    const running = (pods?.items ?? []).filter(
      (pod) =>
        pod.status?.phase === 'Running' && pod.status.containerStatuses?.every((c) => c.ready),
    );
    expect(running).toHaveLength(3);
    expect(running[0]!.status!.containerStatuses![0]!.image).toBe('quay.io/coreos/etcd:v3.4.23');
    await kubectlOk([
      'delete',
      '-f',
      resolve(REPO, 'examples/etcd.yaml'),
      '--wait=true',
      '--timeout=120s',
    ]);
  }, 300_000);
});

const unsafeTarget = `apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata:
  name: e2e-webhook-target
  namespace: default
spec:
  size: 1
  version: 3.4.23
`;
