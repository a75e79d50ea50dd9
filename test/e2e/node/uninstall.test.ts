import { describe, expect, it } from '@jest/globals';
import { resolve } from 'node:path';
import { REPO, deployOperator, getJson, kubectl, kubectlOk, waitFor } from '../support/node.js';

type NamespaceList = { items: { metadata: { name: string }; status?: { phase?: string } }[] };

const managed = `apiVersion: v1
kind: Namespace
metadata:
  name: e2e-uninstall
---
apiVersion: etcd.database.coreos.com/v1beta2
kind: EtcdCluster
metadata:
  name: kept-until-uninstall
  namespace: e2e-uninstall
spec:
  size: 1
  version: 3.4.23
`;

describe('kubectl delete -f deploy/ with managed objects present, the kubelet sending SIGTERM', () => {
  it('leaves no namespace stuck in Terminating', async () => {
    await deployOperator(90);
    await kubectlOk(['apply', '-f', '-'], managed);
    await waitFor(
      async () => {
        const cluster = await getJson<{
          metadata: { finalizers?: string[] };
          status?: { phase?: string };
        }>(['etcdcluster', '-n', 'e2e-uninstall', 'kept-until-uninstall']);
        return (
          cluster?.status?.phase === 'Running' && (cluster.metadata.finalizers ?? []).length > 0
        );
      },
      {
        what: "a Running EtcdCluster with the operator's finalizer",
        timeoutMs: 120_000,
        intervalMs: 1_000,
      },
    );

    const started = Date.now();
    const deleted = await kubectl([
      'delete',
      '-f',
      resolve(REPO, 'deploy'),
      '--wait=true',
      '--timeout=180s',
    ]);
    expect(deleted.stderr).toBe('');
    await kubectlOk(['delete', 'namespace', 'e2e-uninstall', '--wait=true', '--timeout=120s']);
    const terminating = await waitFor(
      async () => {
        const list = await getJson<NamespaceList>(['namespaces']);
        const stuck = (list?.items ?? [])
          .filter((ns) => ns.status?.phase === 'Terminating')
          .map((ns) => ns.metadata.name);
        const gone = !(list?.items ?? []).some((ns) =>
          ['konductor-system', 'e2e-uninstall'].includes(ns.metadata.name),
        );
        return gone ? { stuck } : undefined;
      },
      { what: 'konductor-system and e2e-uninstall gone', timeoutMs: 120_000, intervalMs: 1_000 },
    );
    process.stderr.write(
      `[e2e] kubectl delete -f deploy/: everything gone ${((Date.now() - started) / 1000).toFixed(1)} s after the delete\n`,
    );
    expect(terminating!.stuck).toEqual([]);
    const crds = await getJson<{ items: { metadata: { name: string } }[] }>(['crds']);
    expect(
      (crds?.items ?? [])
        .map((crd) => crd.metadata.name)
        .filter((name) => name.endsWith('.coreos.com')),
    ).toEqual([]);
  }, 600_000);
});
