import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { endWebhookRuns, exitWithin, spawnKonductor, type Run } from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { unreachableConfiguration } from '../../support/webhook-configurations.js';
import { installWidgetCrd } from '../../support/widgets.js';

/**
 * The operator's admission configurations are cluster-wide: `konductor uninstall -n <namespace>`
 * removes what the operator manages in that namespace only, so they stay for the others.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url));
const fixture = 'test/fixtures/handlers/widget-children.ts';

let kc: KubeConfig;
let api: ApiClient;
const children: ChildProcess[] = [];
const identities: string[] = [];

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  api = new ApiClient(kc);
});

afterAll(async () => {
  await endWebhookRuns(api, children, identities);
  api?.close();
});

function configurations() {
  return api.resource<KubeObject>(
    'admissionregistration.k8s.io/v1',
    'validatingwebhookconfigurations',
  );
}

/** An identity whose (harmless) configuration is registered, and a namespace to uninstall. */
async function registered(prefix: string): Promise<{ identity: string; namespace: string }> {
  const identity = `${prefix}-${randomBytes(4).toString('hex')}.konductor.dev`;
  identities.push(identity);
  await configurations().create(unreachableConfiguration(identity));
  return { identity, namespace: await uniqueNamespace(kc, prefix) };
}

async function uninstall(args: string[]): Promise<{ run: Run; code: number | string }> {
  const run = spawnKonductor(
    'bin/konductor.mjs',
    ['uninstall', fixture, '--kubeconfig', process.env.KONDUCTOR_TEST_KUBECONFIG!, ...args],
    { cwd: root },
  );
  children.push(run.child);
  return { run, code: await exitWithin(run, 120_000) };
}

describe('konductor uninstall -n <namespace> and the webhook configurations', () => {
  test('keeps them, as the operator still serves the other namespaces, and says why', async () => {
    const { identity, namespace } = await registered('uninst-ns');
    const { run, code } = await uninstall([
      '-n',
      namespace,
      '--lease-namespace',
      namespace,
      '--identity',
      identity,
    ]);
    expect(code).toBe(0);
    expect(run.stdout()).toContain(
      `kept validatingwebhookconfigurations/${identity}: it serves every namespace the operator does, and only ${namespace} was uninstalled\n`,
    );
    expect(await configurations().find({ name: identity })).toBeDefined();
  });

  test('--dry-run says it would keep them', async () => {
    const { identity, namespace } = await registered('uninst-dry');
    const { run, code } = await uninstall([
      '-n',
      namespace,
      '--lease-namespace',
      namespace,
      '--identity',
      identity,
      '--dry-run',
    ]);
    expect(code).toBe(0);
    expect(run.stdout()).toContain(
      `would keep validatingwebhookconfigurations/${identity}: it serves every namespace the operator does, and only ${namespace} was uninstalled\n`,
    );
    expect(await configurations().find({ name: identity })).toBeDefined();
  });
});
