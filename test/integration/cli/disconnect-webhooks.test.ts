import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { installCrds, readCrds } from '../../../src/testing/index.js';
import { endWebhookRuns, exitWithin, spawnKonductor, type Run } from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { ETCD_API, installEtcdCrds } from '../../support/etcd.js';
import { kubectl, kubectlApply } from '../../support/kubectl.js';
import { unreachableConfiguration } from '../../support/webhook-configurations.js';
import { waitFor } from '../../support/wait-for.js';

/**
 * deploy/README.md's disconnect, step by step, with the bundled operators serving their webhooks
 * (failurePolicy Fail): stop the operator (the Deployment scaled to 0), `konductor disconnect
 * src/handlers --lease-namespace <its namespace>`, and the cluster is usable afterwards.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url));
const monitoringCrds = fileURLToPath(
  new URL('../../../crds/monitoring.coreos.com.yaml', import.meta.url),
);
const kubeconfig = (): string => process.env.KONDUCTOR_TEST_KUBECONFIG!;

let kc: KubeConfig;
let api: ApiClient;
const children: ChildProcess[] = [];
const identities: string[] = [];

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installCrds(kc, readCrds(monitoringCrds));
  await installEtcdCrds(kc);
  api = new ApiClient(kc);
});

afterAll(async () => {
  await endWebhookRuns(api, children, identities);
  api?.close();
});

function konductor(args: string[]): Run {
  const run = spawnKonductor('bin/konductor.mjs', args, { cwd: root });
  children.push(run.child);
  return run;
}

function cluster(namespace: string, name: string, size: number): Record<string, unknown> {
  return {
    apiVersion: ETCD_API,
    kind: 'EtcdCluster',
    metadata: { namespace, name },
    spec: { size, version: '3.4.23' },
  };
}

async function readCluster(namespace: string, name: string): Promise<KubeObject | undefined> {
  return api.resource<KubeObject>(ETCD_API, 'etcdclusters').find({ namespace, name });
}

describe('konductor disconnect of an operator with webhooks, as deploy/README.md says', () => {
  test('removes the webhook configurations before releasing: 0 failed, the finalizer gone, writes admitted afterwards, delete completes', async () => {
    const namespace = await uniqueNamespace(kc, 'disc-webhooks');
    const identity = `disc-${randomBytes(4).toString('hex')}.konductor.dev`;
    identities.push(identity);
    const finalizer = `${identity}/finalizer`;
    const scope = [
      '--kubeconfig',
      kubeconfig(),
      '-n',
      namespace,
      '--lease-namespace',
      namespace,
      '--identity',
      identity,
    ];
    const operator = konductor([
      'run',
      'src/handlers',
      ...scope,
      '--health-port',
      '0',
      '--webhook-port',
      '0',
      '--webhook-url',
      'https://127.0.0.1',
      '--log-format',
      'json',
    ]);
    const clash = {
      ...cluster(namespace, 'probe', 1),
      spec: { size: 1, version: '3.4.23', pod: { labels: { app: 'mine' } } },
    };
    await waitFor(async () => (await kubectlApply(clash, ['--dry-run=server'])).code !== 0, {
      what: `the operator's webhooks to answer (stderr: ${operator.stderr().slice(-300)})`,
      timeoutMs: 90_000,
    });
    expect((await kubectlApply(cluster(namespace, 'kept', 1))).code).toBe(0);
    await waitFor(
      async () => (await readCluster(namespace, 'kept'))?.metadata?.finalizers?.includes(finalizer),
      { what: 'the operator to add its finalizer', timeoutMs: 60_000 },
    );

    // kubectl -n <ns> scale deployment konductor --replicas=0: the operator stops and releases its Lease.
    operator.child.kill('SIGTERM');
    expect(await exitWithin(operator, 60_000)).toBe(0);

    const disconnect = konductor(['disconnect', 'src/handlers', ...scope]);
    expect(await exitWithin(disconnect, 120_000)).toBe(0);
    const lines = disconnect.stdout().trim().split('\n');
    expect(lines).toContain(
      `deleted validatingwebhookconfigurations/${identity}: its webhooks would refuse every write once the operator is gone`,
    );
    expect(lines.at(-1)).toMatch(/, 0 failed$/);
    expect((await readCluster(namespace, 'kept'))?.metadata?.finalizers ?? []).not.toContain(
      finalizer,
    );

    expect((await kubectlApply(cluster(namespace, 'kept', 3))).code).toBe(0);
    expect((await kubectlApply(cluster(namespace, 'new', 1))).code).toBe(0);
    const monitor = {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { namespace, name: 'after' },
      spec: { selector: {}, endpoints: [{ port: 'metrics' }] },
    };
    expect((await kubectlApply(monitor)).code).toBe(0);
    const deleted = await kubectl([
      'delete',
      'etcdcluster',
      'kept',
      '-n',
      namespace,
      '--timeout=20s',
    ]);
    expect(deleted.code).toBe(0);
    expect(await readCluster(namespace, 'kept')).toBeUndefined();
  }, 300_000);

  test('--dry-run says it would delete the webhook configurations first, and deletes nothing', async () => {
    const namespace = await uniqueNamespace(kc, 'disc-dry');
    const identity = `dry-${randomBytes(4).toString('hex')}.konductor.dev`;
    identities.push(identity);
    const configurations = api.resource<KubeObject>(
      'admissionregistration.k8s.io/v1',
      'validatingwebhookconfigurations',
    );
    await configurations.create(unreachableConfiguration(identity));

    const dry = konductor([
      'disconnect',
      'src/handlers',
      '--kubeconfig',
      kubeconfig(),
      '-n',
      namespace,
      '--lease-namespace',
      namespace,
      '--identity',
      identity,
      '--dry-run',
    ]);
    expect(await exitWithin(dry, 120_000)).toBe(0);
    expect(dry.stdout()).toContain(
      `would delete validatingwebhookconfigurations/${identity} first: its webhooks would refuse every write once the operator is gone\n`,
    );
    expect(await configurations.find({ name: identity })).toBeDefined();
  }, 180_000);
});
