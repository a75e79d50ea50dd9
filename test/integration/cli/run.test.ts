import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { exitWithin, spawnKonductor, type Run } from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { Widgets, installWidgetCrd, readWidget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { startOtlpReceiver } from '../../support/otlp-receiver.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const fixture = 'test/fixtures/handlers/widget-status.ts';

const children: ChildProcess[] = [];

/** Starts `node bin/konductor.mjs <args>` from the repository root, without any KONDUCTOR_* settings of our own. */
function konductor(args: string[], env?: NodeJS.ProcessEnv): Run {
  const run = spawnKonductor('bin/konductor.mjs', args, { cwd: root, env });
  children.push(run.child);
  return run;
}

/** `konductor run` of the fixture on one namespace, logging JSON, on any free health port, without leader election. */
function runFixture(namespace: string, extra: string[] = [], env?: NodeJS.ProcessEnv): Run {
  const args = ['run', fixture, '--kubeconfig', kubeconfigPath, '-n', namespace];
  return konductor(
    [...args, '--log-format', 'json', '--health-port', '0', '--standalone', ...extra],
    env,
  );
}

function stderrLines(run: Run): string[] {
  return run
    .stderr()
    .split('\n')
    .filter((line) => line.trim() !== '');
}

let kc: KubeConfig;
let kubeconfigPath: string;
let scratch: string;

beforeAll(async () => {
  kc = sharedKubeConfig();
  kubeconfigPath = process.env.KONDUCTOR_TEST_KUBECONFIG!;
  await installWidgetCrd(kc);
  scratch = mkdtempSync(join(tmpdir(), 'konductor-cli-'));
});

afterEach(() => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

describe('konductor run', () => {
  test('--tracing on exports the runs to OTEL_EXPORTER_OTLP_ENDPOINT, puts trace_id in the log lines written in them, and flushes on SIGTERM', async () => {
    const namespace = await uniqueNamespace(kc, 'cli-traced');
    const receiver = await startOtlpReceiver();
    try {
      const run = runFixture(namespace, ['--tracing', 'on'], {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url.replace(/\/v1\/traces$/, ''),
        OTEL_SERVICE_NAME: 'cli-spec',
      });
      await new Widgets(kc, namespace).create('traced');
      await waitFor(
        async () => (await readWidget(namespace, 'traced'))?.status?.phase === 'Ready',
        {
          what: 'the widget becomes Ready',
          timeoutMs: 40_000,
        },
      );
      run.child.kill('SIGTERM');
      expect(await exitWithin(run, 10_000)).toBe(0);

      const spans = receiver
        .spans()
        .filter((s) => s.name === 'run Widget' && s.attributes['k8s.namespace.name'] === namespace);
      expect(spans.length).toBeGreaterThanOrEqual(1);
      expect(spans[0]!.resource['service.name']).toBe('cli-spec');
      expect(spans[0]!.resource['konductor.identity']).toBe('konductor.dev');
      const traced = run
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { trace_id?: string; msg?: string })
        .filter((line) => line.trace_id !== undefined);
      expect(traced.map((line) => line.trace_id)).toContain(spans[0]!.traceId);
    } finally {
      await receiver.close();
    }
  });

  test('runs the handlers of a file against the cluster, logs JSON, and exits 0 on SIGTERM', async () => {
    const namespace = await uniqueNamespace(kc, 'cli');
    const run = konductor([
      'run',
      fixture,
      '--kubeconfig',
      kubeconfigPath,
      '-n',
      namespace,
      '--log-format',
      'json',
      '--health-port',
      '0',
      '--lease-namespace',
      namespace,
    ]);

    await new Widgets(kc, namespace).create('w1');
    await waitFor(async () => (await readWidget(namespace, 'w1'))?.status?.phase === 'Ready', {
      what: 'the widget becomes Ready',
      timeoutMs: 40_000,
    });

    run.child.kill('SIGTERM');
    expect(await exitWithin(run, 10_000)).toBe(0);
    const lines = run
      .stdout()
      .split('\n')
      .filter((line) => line !== '');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
    expect(
      lines.some((line) => (JSON.parse(line) as { msg?: string }).msg === 'operator stopped'),
    ).toBe(true);
    expect(run.stderr()).toBe('');
  });

  test('--identity names the bookkeeping the operator writes and its Lease', async () => {
    const namespace = await uniqueNamespace(kc, 'cli-identity');
    const args = [
      'run',
      fixture,
      '--kubeconfig',
      kubeconfigPath,
      '-n',
      namespace,
      '--log-format',
      'json',
      '--health-port',
      '0',
      '--lease-namespace',
      namespace,
    ];
    const run = konductor([...args, '--identity', 'widgets.example.com']);

    await new Widgets(kc, namespace).create('w1');
    await waitFor(async () => (await readWidget(namespace, 'w1'))?.status?.phase === 'Ready', {
      what: 'the widget becomes Ready',
      timeoutMs: 40_000,
    });
    const annotations = Object.keys(
      (await readWidget(namespace, 'w1'))?.metadata?.annotations ?? {},
    );
    expect(annotations).toContain('widgets.example.com/last-handled-configuration');
    expect(annotations.filter((key) => key.startsWith('konductor.dev/'))).toEqual([]);
    const lease = await kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace, name: 'widgets.example.com-leader' });
    expect(lease.spec?.holderIdentity).toBeTruthy();

    run.child.kill('SIGTERM');
    expect(await exitWithin(run, 10_000)).toBe(0);
  });

  test('wrong arguments exit 2 with one line naming the flag', async () => {
    const run = konductor([
      'run',
      fixture,
      '--kubeconfig',
      kubeconfigPath,
      '--concurrency',
      'zero',
    ]);
    expect(await exitWithin(run, 20_000)).toBe(2);
    const lines = stderrLines(run);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^konductor: .*--concurrency/);
  });

  test('an invalid KONDUCTOR_IDENTITY exits 2 with one line naming the variable, the value and the rule', async () => {
    const run = spawnKonductor(
      'bin/konductor.mjs',
      ['run', fixture, '--kubeconfig', kubeconfigPath],
      { cwd: root, env: { KONDUCTOR_IDENTITY: 'My_Operator' } },
    );
    children.push(run.child);
    expect(await exitWithin(run, 20_000)).toBe(2);
    const lines = stderrLines(run);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^konductor: KONDUCTOR_IDENTITY: the operator identity "My_Operator" is not a DNS-1123 subdomain .*: use lower-case letters, digits, '-' and '\.'/,
    );
  });

  test('a handler file that throws on import exits 1 with one line naming the file', async () => {
    const broken = join(scratch, 'broken-handlers.ts');
    writeFileSync(
      broken,
      "export class Broken {}\nthrow new Error('the database URL is not set');\n",
    );
    const run = konductor(['run', broken, '--kubeconfig', kubeconfigPath]);
    expect(await exitWithin(run, 20_000)).toBe(1);
    const lines = stderrLines(run);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^konductor: cannot load .*broken-handlers\.ts: the database URL is not set$/,
    );
  });

  test('a health port already taken exits 1 with one line naming the port and what to do; the operator on it keeps serving', async () => {
    const namespace = await uniqueNamespace(kc, 'cli-port');
    const first = runFixture(namespace);
    const listening = (): number | undefined =>
      first
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg?: string; port?: number })
        .find((line) => line.msg === 'health and metrics server listening')?.port;
    await waitFor(() => listening() !== undefined, {
      what: 'the first operator to serve health',
      timeoutMs: 40_000,
    });
    const port = listening()!;

    const second = konductor([
      'run',
      fixture,
      '--kubeconfig',
      kubeconfigPath,
      '-n',
      namespace,
      '--log-format',
      'json',
      '--health-port',
      String(port),
      '--standalone',
    ]);
    expect(await exitWithin(second, 40_000)).toBe(1);
    const lines = stderrLines(second);
    expect(lines).toEqual([
      `konductor: the health server cannot listen on 0.0.0.0:${port}: the port is already in use (EADDRINUSE); free it, or ` +
        'set another port with --health-port (KONDUCTOR_HEALTH_PORT) or the health.port option; 0 picks any free port',
    ]);
    expect(second.stdout()).not.toContain('operator started');

    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(first.child.exitCode).toBeNull();
  });

  test('an unreachable cluster exits 1 with one line', async () => {
    const unreachable = join(scratch, 'unreachable.kubeconfig');
    writeFileSync(
      unreachable,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{ name: nowhere, cluster: { server: "https://127.0.0.1:1", insecure-skip-tls-verify: true } }]',
        'users: [{ name: someone, user: { token: not-a-token } }]',
        'contexts: [{ name: nowhere, context: { cluster: nowhere, user: someone } }]',
        'current-context: nowhere',
        '',
      ].join('\n'),
    );
    const run = konductor(['run', fixture, '--kubeconfig', unreachable]);
    expect(await exitWithin(run, 20_000)).toBe(1);
    const lines = stderrLines(run);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^konductor: cannot reach the cluster at https:\/\/127\.0\.0\.1:1: /);
  });
});
