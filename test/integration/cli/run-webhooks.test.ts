import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import { installCrds, readCrds } from '../../../src/testing/index.js';
import { endWebhookRuns, spawnKonductor, type Run } from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { ETCD_API, installEtcdCrds } from '../../support/etcd.js';
import { kubectlApply } from '../../support/kubectl.js';
import { waitFor } from '../../support/wait-for.js';
import { installWidgetCrd, WIDGET_API_VERSION } from '../../support/widgets.js';

/**
 * Admission webhooks as `konductor run` serves them, the way a user (or deploy/) starts it: the CLI
 * process loads the handler folder, registers the configuration, and the real API server calls it.
 * The API server reaches the webhook server at 127.0.0.1 (`--webhook-url`), as in the library specs.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url));
const monitoringCrds = fileURLToPath(
  new URL('../../../crds/monitoring.coreos.com.yaml', import.meta.url),
);

type Configuration = KubeObject & { webhooks?: Array<{ name: string }> };

let kc: KubeConfig;
let api: ApiClient;
const children: ChildProcess[] = [];
const identities: string[] = [];
const folders: string[] = [];

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  await installCrds(kc, readCrds(monitoringCrds));
  await installEtcdCrds(kc);
  api = new ApiClient(kc);
});

afterAll(async () => {
  await endWebhookRuns(api, children, identities);
  api?.close();
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/**
 * The Dockerfile's image, without its container: a folder holding the package's package.json, bin/
 * and a build of src/ (tsconfig.build.json, as `npm run build` makes it) and no src/, so bin/konductor.mjs
 * runs the compiled CLI and `konductor` resolves to the compiled framework, as in the image.
 * Dependencies come from this checkout's node_modules.
 */
async function imageTree(): Promise<string> {
  const folder = mkdtempSync(join(tmpdir(), 'konductor-image-'));
  folders.push(folder);
  cpSync(join(root, 'package.json'), join(folder, 'package.json'));
  cpSync(join(root, 'bin'), join(folder, 'bin'), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(folder, 'node_modules'), 'dir');
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  await promisify(execFile)(
    process.execPath,
    [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(folder, 'dist')],
    { cwd: root },
  );
  return folder;
}

/** `konductor run <handlers>` for one namespace, its webhooks reached at 127.0.0.1 on a free port, under an identity of its own. */
async function runWebhooks(
  handlers: string,
  prefix: string,
  cwd = root,
): Promise<{ run: Run; namespace: string; identity: string }> {
  const namespace = await uniqueNamespace(kc, prefix);
  const identity = `${prefix}-${randomBytes(4).toString('hex')}.konductor.dev`;
  identities.push(identity);
  const args = [
    'run',
    handlers,
    '--kubeconfig',
    process.env.KONDUCTOR_TEST_KUBECONFIG!,
    '-n',
    namespace,
    '--lease-namespace',
    namespace,
    '--identity',
    identity,
  ];
  const run = spawnKonductor(
    'bin/konductor.mjs',
    [
      ...args,
      '--health-port',
      '0',
      '--webhook-port',
      '0',
      '--webhook-url',
      'https://127.0.0.1',
      '--log-format',
      'json',
    ],
    { cwd },
  );
  children.push(run.child);
  return { run, namespace, identity };
}

/** The ValidatingWebhookConfiguration named `identity`, once it exists. */
async function configuration(identity: string, run: Run): Promise<Configuration> {
  const found = await waitFor(
    () =>
      api
        .resource<Configuration>(
          'admissionregistration.k8s.io/v1',
          'validatingwebhookconfigurations',
        )
        .find({ name: identity }),
    {
      what: `ValidatingWebhookConfiguration ${identity} (konductor stderr: ${run.stderr().slice(-500)})`,
      timeoutMs: 60_000,
    },
  );
  return found!;
}

/** The API server picks up a new configuration shortly after it is written: wait until `refused` is refused. */
async function refusing(refused: Record<string, unknown>): Promise<void> {
  await waitFor(async () => (await kubectlApply(refused, ['--dry-run=server'])).code !== 0, {
    what: 'the API server to call the new webhooks',
    timeoutMs: 30_000,
  });
}

function widget(
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
): Record<string, unknown> {
  return { apiVersion: WIDGET_API_VERSION, kind: 'Widget', metadata: { namespace, name }, spec };
}

describe('konductor run on a folder holding only admission classes', () => {
  let served: { run: Run; namespace: string; identity: string };

  beforeAll(async () => {
    served = await runWebhooks('test/fixtures/admission-only', 'cli-adm');
  });

  test('registers the ValidatingWebhookConfiguration, and the API server refuses through it with the handler message', async () => {
    const { run, namespace, identity } = served;
    expect((await configuration(identity, run)).webhooks).toHaveLength(2);
    await refusing(widget(namespace, 'probe', { size: 10 }));

    const refused = await kubectlApply(widget(namespace, 'big', { size: 10 }));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('spec.size must be at most 9');
    expect((await kubectlApply(widget(namespace, 'fine', { size: 3 }))).code).toBe(0);
  });

  test('two handler ids differing only in "_" and "-" both register, each under its own webhook name, and both answer', async () => {
    const { run, namespace, identity } = served;
    const names = ((await configuration(identity, run)).webhooks ?? []).map((hook) => hook.name);
    expect(new Set(names).size).toBe(2);
    await refusing(widget(namespace, 'probe', { size: 10 }));

    const red = await kubectlApply(widget(namespace, 'red', { size: 1, color: 'red' }));
    expect(red.code).not.toBe(0);
    expect(red.stderr).toContain('spec.color red is not allowed');
  });
});

describe('konductor run dist/handlers, what deploy/ runs, from a build laid out as the image', () => {
  let served: { run: Run; namespace: string; identity: string };

  beforeAll(async () => {
    served = await runWebhooks('dist/handlers', 'cli-bundled', await imageTree());
  }, 240_000);

  function serviceMonitor(name: string, spec: Record<string, unknown>): Record<string, unknown> {
    return {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'ServiceMonitor',
      metadata: { namespace: served.namespace, name },
      spec: { selector: {}, endpoints: [{ port: 'metrics' }], ...spec },
    };
  }

  const lookahead = {
    endpoints: [
      {
        port: 'metrics',
        relabelings: [{ sourceLabels: ['job'], regex: '(?=api).*', action: 'keep' }],
      },
    ],
  };

  test('registers webhooks for ServiceMonitors, PodMonitors and EtcdClusters', async () => {
    const { run, identity } = served;
    const hooks = await waitFor(
      async () => {
        const names = ((await configuration(identity, run)).webhooks ?? []).map(
          (hook) => hook.name,
        );
        return names.length >= 3 ? names : undefined;
      },
      { what: 'the bundled webhooks to be registered' },
    );
    const names = hooks!.join(' ');
    expect(names).toMatch(/servicemonitor/);
    expect(names).toMatch(/podmonitor/);
    expect(names).toMatch(/etcd/);
  });

  test('a ServiceMonitor with a regex RE2 rejects is refused at create, naming the field', async () => {
    await configuration(served.identity, served.run);
    await refusing(serviceMonitor('probe', lookahead));

    const run = await kubectlApply(serviceMonitor('lookahead', lookahead));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('spec.endpoints[0].relabelings[0].regex');
  });

  test('an EtcdCluster the operator could not run is refused at create with the reason', async () => {
    await configuration(served.identity, served.run);
    const clash = {
      apiVersion: ETCD_API,
      kind: 'EtcdCluster',
      metadata: { namespace: served.namespace, name: 'selector-clash' },
      spec: { size: 1, version: '3.4.23', pod: { labels: { app: 'mine' } } },
    };
    await refusing(clash);

    const run = await kubectlApply(clash);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      "spec.pod.labels.app is reserved for the operator's own selectors",
    );
  });
});
