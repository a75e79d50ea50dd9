import { describe, expect, it } from '@jest/globals';
import {
  deployOperator,
  getJson,
  kubectlOk,
  localNode,
  operatorPods,
  waitFor,
} from '../support/node.js';

type Lease = { spec?: { holderIdentity?: string; renewTime?: string; leaseTransitions?: number } };

const lease = () => getJson<Lease>(['lease', '-n', 'konductor-system', 'konductor-leader']);

describe('the deployed operator while its API server is frozen for 10 s (SIGSTOP), less than the Lease duration', () => {
  it('keeps leading: the same Pod, container and Lease holder, renewed soon after the thaw, and a change made then is handled', async () => {
    await deployOperator(90);
    const [pod] = (await operatorPods()).filter((p) => p.ready && !p.deleting);
    const holder = await waitFor(async () => (await lease())?.spec?.holderIdentity, {
      what: 'a Lease holder',
      timeoutMs: 60_000,
    });
    const before = (await lease())!.spec!;
    const apiServer = localNode().pidOf('kube-apiserver');

    process.kill(apiServer, 'SIGSTOP');
    const frozenAt = Date.now();
    try {
      await new Promise((resolve) => setTimeout(resolve, 10_000));
    } finally {
      process.kill(apiServer, 'SIGCONT');
    }
    const thawedAt = Date.now();

    const renewed = await waitFor(
      async () => {
        const spec = (await lease())?.spec;
        return spec?.renewTime && Date.parse(spec.renewTime) >= thawedAt - 1_000 ? spec : undefined;
      },
      { what: 'the Lease renewed after the thaw', timeoutMs: 60_000, intervalMs: 100 },
    );
    const renewMs = Date.parse(renewed!.renewTime!) - thawedAt;

    await kubectlOk(['apply', '-f', '-'], target);
    await waitFor(
      async () =>
        (await getJson<{ status?: { phase?: string } }>(['etcdcluster', 'e2e-after-freeze']))
          ?.status?.phase === 'Running',
      {
        what: 'EtcdCluster e2e-after-freeze Running',
        timeoutMs: 120_000,
        intervalMs: 1_000,
      },
    );
    // Past any deadline the freeze could have set off (renew deadline 20 s after the last renewal).
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, frozenAt + 25_000 - Date.now())),
    );

    const [after] = (await operatorPods()).filter((p) => !p.deleting);
    process.stderr.write(
      `[e2e] API server frozen 10 s: kept leading; Lease renewed ${renewMs} ms after the thaw; restarts ${pod!.restarts} -> ${after!.restarts}\n`,
    );
    expect(after!.uid).toBe(pod!.uid);
    expect(after!.restarts).toBe(pod!.restarts);
    const now = (await lease())!.spec!;
    expect(now.holderIdentity).toBe(holder);
    expect(now.leaseTransitions ?? 0).toBe(before.leaseTransitions ?? 0);
    await kubectlOk(['delete', 'etcdcluster', 'e2e-after-freeze', '--wait=true', '--timeout=120s']);
  }, 300_000);
});

const target = `apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata:
  name: e2e-after-freeze
  namespace: default
spec:
  size: 1
  version: 3.4.23
`;
