import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { runCommand } from '../../../src/testing/run-command.js';
import { TrackedChanges } from '../../support/chaos/ledger.js';
import { Widgets } from '../../support/widgets.js';
import {
  REPO,
  getJson,
  killProcessInPod,
  kubectl,
  kubectlOk,
  localNode,
  waitFor,
} from '../support/node.js';

const GROUP = 'greet.example.org';
const NPM_FLAGS = ['--no-audit', '--no-fund', '--prefer-offline'];

let scratch: string;
let project: string;

/** Runs a command to its end; rejects with its output when it fails. */
async function command(
  file: string,
  args: readonly string[],
  cwd: string,
  timeoutMs = 300_000,
): Promise<string> {
  const run = await runCommand(file, args, { cwd, timeoutMs });
  if (run.code !== 0)
    throw new Error(`${file} ${args.join(' ')} exited ${run.code}:\n${run.stderr.slice(-3000)}`);
  return run.stdout;
}

/** The Deployment `konductor manifests` printed: its name and namespace. */
function deploymentIn(manifests: string): { name: string; namespace: string } {
  const found = /^kind: Deployment\nmetadata:\n {2}name: (\S+)\n {2}namespace: (\S+)/m.exec(
    manifests,
  );
  if (!found) throw new Error(`konductor manifests printed no Deployment:\n${manifests}`);
  return { name: found[1]!, namespace: found[2]! };
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'konductor-e2e-init-'));
  const packed = join(scratch, 'pack');
  mkdirSync(packed);
  await command('npm', ['pack', '--pack-destination', packed], REPO);
  const tarball = join(
    packed,
    readdirSync(packed).find((name) => name.endsWith('.tgz'))!,
  );
  const consumer = join(scratch, 'consumer');
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, 'package.json'),
    '{ "name": "consumer", "private": true, "type": "module" }\n',
  );
  await command('npm', ['install', ...NPM_FLAGS, tarball], consumer);
  await command(
    'npx',
    ['konductor', 'init', 'greeter', '--group', GROUP, '--konductor', `file:${tarball}`],
    consumer,
  );
  project = join(consumer, 'greeter');
  await command('npm', ['install', ...NPM_FLAGS], project);
}, 900_000);

afterAll(async () => {
  if (project) {
    const manifests = await command(
      'npx',
      [
        'konductor',
        'manifests',
        'src/handlers.ts',
        '--image',
        'greeter:0.1.0',
        '--create-namespace',
      ],
      project,
    ).catch(() => '');
    if (manifests)
      await kubectl(['delete', '--ignore-not-found', '--wait=true', '-f', '-'], manifests);
    await kubectl(['delete', '--ignore-not-found', '-f', join(project, 'crds')]);
  }
  rmSync(scratch, { recursive: true, force: true });
}, 300_000);

describe('a project made by npx konductor init, deployed to the local node', () => {
  it('builds its image with the same script, deploys with npx konductor manifests | kubectl apply -f -, and its handler writes status', async () => {
    const node = localNode();
    const started = Date.now();
    await node.loadImage(project, 'greeter:0.1.0');
    const built = (Date.now() - started) / 1000;
    await kubectlOk(['apply', '-f', join(project, 'crds')]);
    // The tag the project's Dockerfile names (a `latest` tag would make the kubelet try a registry).
    const manifests = await command(
      'npx',
      [
        'konductor',
        'manifests',
        'src/handlers.ts',
        '--image',
        'greeter:0.1.0',
        '--create-namespace',
        '--crd',
        'crds/',
      ],
      project,
    );
    expect(manifests).toContain('image: greeter:0.1.0');
    await kubectlOk(['apply', '-f', '-'], manifests);
    const deployment = deploymentIn(manifests);
    await kubectlOk([
      '-n',
      deployment.namespace,
      'rollout',
      'status',
      `deploy/${deployment.name}`,
      '--timeout=90s',
    ]);
    const plural = 'greetings';
    await kubectlOk(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: `${GROUP}/v1`,
        kind: 'Greeting',
        metadata: { name: 'hello', namespace: 'default' },
        spec: { name: 'world' },
      }),
    );
    const status = await waitFor(
      async () => {
        const object = await getJson<{ status?: { phase?: string; message?: string } }>([
          `${plural}.${GROUP}`,
          'hello',
          '-n',
          'default',
        ]);
        return object?.status?.message ? object.status : undefined;
      },
      { what: 'status.message on the Greeting hello', timeoutMs: 90_000, intervalMs: 500 },
    );
    process.stderr.write(
      `[e2e] init project: image built and loaded in ${built.toFixed(1)} s, status written ${((Date.now() - started) / 1000).toFixed(1)} s after the start\n`,
    );
    expect(status).toMatchObject({ phase: 'Ready', message: 'Hello, world!' });
    await kubectlOk([
      'delete',
      `${plural}.${GROUP}`,
      'hello',
      '-n',
      'default',
      '--wait=true',
      '--timeout=60s',
    ]);
  }, 600_000);
});

interface PodTemplate {
  volumes?: unknown[];
  containers: Array<{ volumeMounts?: unknown[]; env?: unknown[] }>;
}

/** The manifests with the ledger folder mounted into the operator's container, so one rollout has it. */
function withLedger(manifests: string, ledgerDir: string): string {
  const documents = (
    yaml.loadAll(manifests) as Array<{
      kind?: string;
      spec?: { template: { spec: PodTemplate } };
    } | null>
  ).filter((d) => d !== null);
  const pod = documents.find((d) => d.kind === 'Deployment')?.spec?.template.spec;
  const container = pod?.containers[0];
  if (!pod || !container)
    throw new Error(`konductor manifests printed no Deployment with a container:\n${manifests}`);
  pod.volumes = [
    ...(pod.volumes ?? []),
    { name: 'ledger', hostPath: { path: ledgerDir, type: 'Directory' } },
  ];
  container.volumeMounts = [
    ...(container.volumeMounts ?? []),
    { name: 'ledger', mountPath: '/ledger' },
  ];
  container.env = [
    ...(container.env ?? []),
    { name: 'CHAOS_LEDGER', value: '/ledger/ledger.jsonl' },
    { name: 'CHAOS_HANDLER_MS', value: '200' },
  ];
  return documents.map((document) => yaml.dump(document)).join('---\n');
}

/** The chaos suite's ledger workload, as a project's handlers file (importing the installed package). */
function ledgerHandlers(): string {
  const fixture = readFileSync(join(REPO, 'test/fixtures/handlers/ledger-widgets.ts'), 'utf8');
  return fixture.replace("'../../../src/framework/index.js'", "'konductor'");
}

describe('the operator Pod replaced or its container killed while objects keep changing', () => {
  const namespace = 'e2e-ledger';
  let ledgerDir: string;
  let ledger: string;
  let deployment: { name: string; namespace: string };
  let widgets: Widgets;

  beforeAll(async () => {
    const node = localNode();
    writeFileSync(join(project, 'src/handlers.ts'), ledgerHandlers());
    await node.loadImage(project, 'ledger:0.1.0');
    await kubectlOk(['apply', '-f', join(REPO, 'test/fixtures/widgets-crd.yaml')]);
    await kubectl(['create', 'namespace', namespace]);
    const manifests = await command(
      'npx',
      [
        'konductor',
        'manifests',
        'src/handlers.ts',
        '--image',
        'ledger:0.1.0',
        '--create-namespace',
        '--crd',
        join(REPO, 'test/fixtures/widgets-crd.yaml'),
      ],
      project,
    );
    deployment = deploymentIn(manifests);
    // The ledger outlives the Pods: a folder of this machine, mounted into each of them from the first.
    ledgerDir = mkdtempSync(join(tmpdir(), 'konductor-e2e-ledger-'));
    chmodSync(ledgerDir, 0o777);
    ledger = join(ledgerDir, 'ledger.jsonl');
    await kubectlOk(['apply', '-f', '-'], withLedger(manifests, ledgerDir));
    await kubectlOk([
      '-n',
      deployment.namespace,
      'rollout',
      'status',
      `deploy/${deployment.name}`,
      '--timeout=120s',
    ]);
    widgets = new Widgets(node.kubeConfig(), namespace);
  }, 900_000);

  afterAll(async () => {
    await kubectl(['delete', 'namespace', namespace, '--wait=true', '--timeout=120s']);
    if (deployment)
      await kubectl([
        '-n',
        deployment.namespace,
        'delete',
        'deployment',
        deployment.name,
        '--wait=true',
      ]);
    if (ledgerDir) rmSync(ledgerDir, { recursive: true, force: true });
  }, 300_000);

  async function operatorPod(): Promise<{ name: string; uid: string }> {
    const list = await getJson<{
      items: {
        metadata: { name: string; uid: string; deletionTimestamp?: string };
        status?: { phase?: string };
      }[];
    }>(['pods', '-n', deployment.namespace, '-l', `app.kubernetes.io/name=${deployment.name}`]);
    const pod = (list?.items ?? []).find(
      (p) => !p.metadata.deletionTimestamp && p.status?.phase === 'Running',
    );
    if (!pod) throw new Error(`no running Pod of ${deployment.namespace}/${deployment.name}`);
    return pod.metadata;
  }

  /** Creates, resizes and deletes widgets for about 12 s, running `fault` 4 s in; waits until all is handled. */
  async function changesAround(
    prefix: string,
    fault: () => Promise<void>,
  ): Promise<{ verdict: ReturnType<TrackedChanges['verdict']>; seconds: number }> {
    const tracked = new TrackedChanges(ledger, widgets);
    const started = Date.now();
    let faulted = false;
    for (let round = 0; round < 12; round += 1) {
      if (!faulted && Date.now() - started >= 4_000) {
        faulted = true;
        await fault();
      }
      await tracked.create(`${prefix}-${round}`, 1);
      if (round > 0) await tracked.resize(`${prefix}-${round - 1}`, 2);
      if (round > 1 && round % 3 === 0) {
        // A deletion handler is owed only for an object the operator has seen (it carries the finalizer):
        // one created and deleted while no operator runs is gone before anyone could handle it.
        const name = `${prefix}-${round - 2}`;
        await waitFor(
          async () => {
            const widget = await getJson<{ metadata: { finalizers?: string[] } }>([
              'widgets.test.konductor.dev',
              name,
              '-n',
              namespace,
            ]);
            return (widget?.metadata.finalizers ?? []).length > 0;
          },
          { what: `the finalizer on ${name}`, timeoutMs: 120_000, intervalMs: 250 },
        );
        await tracked.remove(name);
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    await waitFor(
      async () => {
        const verdict = tracked.verdict();
        return verdict.lost.length === 0 ? verdict : undefined;
      },
      { what: `every change to ${prefix}-* handled`, timeoutMs: 180_000, intervalMs: 1_000 },
    );
    // Anything still to come (a repeat) would show within a few seconds of the last run.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    return { verdict: tracked.verdict(), seconds: (Date.now() - started) / 1000 };
  }

  it('deleted: the replacement Pod takes over and every change is handled exactly once', async () => {
    const before = await operatorPod();
    const { verdict, seconds } = await changesAround('deleted', async () => {
      await kubectlOk(['-n', deployment.namespace, 'delete', 'pod', before.name, '--wait=false']);
    });
    process.stderr.write(
      `[e2e] Pod deleted: ${verdict.changesMade} changes, ${verdict.changesHandled} handled, ${verdict.lost.length} lost, ${verdict.duplicates} duplicated, all handled ${seconds.toFixed(1)} s after the first\n`,
    );
    expect((await operatorPod()).uid).not.toBe(before.uid);
    expect(verdict.lost).toEqual([]);
    expect(verdict.phantom).toEqual([]);
    expect(verdict.duplicates).toBe(0);
    expect(verdict.changesHandled).toBe(verdict.changesMade);
  }, 600_000);

  it('its container killed: the restarted container takes over and every change is handled exactly once', async () => {
    const pod = await operatorPod();
    const { verdict, seconds } = await changesAround('killed', async () => {
      killProcessInPod(pod.uid, 'node');
    });
    process.stderr.write(
      `[e2e] container killed: ${verdict.changesMade} changes, ${verdict.changesHandled} handled, ${verdict.lost.length} lost, ${verdict.duplicates} duplicated, all handled ${seconds.toFixed(1)} s after the first\n`,
    );
    expect(verdict.lost).toEqual([]);
    expect(verdict.phantom).toEqual([]);
    expect(verdict.duplicates).toBe(0);
    expect(verdict.changesHandled).toBe(verdict.changesMade);
  }, 600_000);
});
