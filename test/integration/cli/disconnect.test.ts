import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import { formatMicroTime } from '../../../src/framework/runtime/leader-election.js';
import { FaultProxy, type ProxiedRequest } from '../../../src/testing/chaos/index.js';
import { WidgetChildren } from '../../fixtures/handlers/widget-children.js';
import { WidgetStatus } from '../../fixtures/handlers/widget-status.js';
import { exitWithin, spawnKonductor, type Run } from '../../support/cli.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { startOperator } from '../../support/operators.js';
import { waitFor } from '../../support/wait-for.js';
import { Widgets, installWidgetCrd, widgetIds, type Widget } from '../../support/widgets.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const fixture = 'test/fixtures/handlers/widget-children.ts';
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

let kc: KubeConfig;
let proxy: FaultProxy;
let scratch: string;
/** A kubeconfig whose requests go through `proxy`, so a spec counts what `konductor disconnect` sends. */
let proxied: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  kc = sharedKubeConfig();
  await installWidgetCrd(kc);
  proxy = await FaultProxy.forControlPlane(
    { dir: dirname(process.env.KONDUCTOR_TEST_KUBECONFIG!), kubeConfig: () => kc },
    { requestLogLimit: 100_000 },
  );
  scratch = mkdtempSync(join(tmpdir(), 'konductor-disconnect-'));
  proxied = join(scratch, 'kubeconfig');
  writeFileSync(proxied, proxy.kubeConfig().exportConfig());
});

afterEach(() => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

afterAll(async () => {
  await proxy?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** Runs `konductor disconnect <fixture> <args>` through the proxy; resolves with the run once it exited, and the requests it made. */
async function disconnect(
  args: string[],
  handlers = fixture,
): Promise<{ run: Run; code: number | string; requests: ProxiedRequest[] }> {
  const from = proxy.requests.length;
  const run = spawnKonductor(
    'bin/konductor.mjs',
    ['disconnect', handlers, '--kubeconfig', proxied, ...args],
    { cwd: root },
  );
  children.push(run.child);
  const code = await exitWithin(run, 120_000);
  return { run, code, requests: proxy.requests.slice(from) };
}

function writes(requests: readonly ProxiedRequest[]): ProxiedRequest[] {
  return requests.filter((r) => WRITES.has(r.method));
}

function lastLine(run: Run): string {
  return run.stdout().trim().split('\n').at(-1) ?? '';
}

async function listWidgets(namespace: string): Promise<Widget[]> {
  const list = (await kc
    .makeApiClient(CustomObjectsApi)
    .listNamespacedCustomObject({ ...widgetIds, namespace })) as { items: Widget[] };
  return list.items;
}

/** The child ConfigMaps of a namespace, by name, with their resourceVersions. */
async function childVersions(namespace: string): Promise<Map<string, string>> {
  const list = await kc.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace });
  return new Map(
    list.items
      .filter((c) => c.metadata?.name?.startsWith('widget-'))
      .map((c) => [c.metadata!.name!, c.metadata!.resourceVersion!]),
  );
}

/** Everything of `prefix` a widget carries: its finalizer, annotations and status record. */
function traces(widget: Widget, prefix: string): string[] {
  return [
    ...(widget.metadata?.finalizers ?? [])
      .filter((f) => f.startsWith(`${prefix}/`))
      .map((f) => `finalizer ${f}`),
    ...Object.keys(widget.metadata?.annotations ?? {})
      .filter((key) => key.startsWith(`${prefix}/`))
      .map((key) => `annotation ${key}`),
    ...(widget.status && Object.hasOwn(widget.status, prefix) ? [`status["${prefix}"]`] : []),
  ];
}

/** Creates `count` widgets and waits until the operator handled each (child, finalizer, Ready). */
async function handledWidgets(
  namespace: string,
  count: number,
  handled: (w: Widget) => boolean,
): Promise<void> {
  await new Widgets(kc, namespace).createMany('w', count);
  await waitFor(async () => (await listWidgets(namespace)).filter(handled).length === count, {
    what: `${count} widgets to be handled`,
    timeoutMs: 150_000,
    intervalMs: 500,
  });
}

const handledByDefault = (w: Widget): boolean =>
  w.status?.phase === 'Ready' &&
  (w.metadata?.finalizers ?? []).includes('konductor.dev/finalizer') &&
  Boolean(w.metadata?.annotations?.['konductor.dev/last-handled-configuration']);

describe('konductor disconnect', () => {
  test('1,000 handled widgets lose every finalizer and bookkeeping field, their children get no write, and a second run writes nothing', async () => {
    const namespace = await uniqueNamespace(kc, 'disconnect');
    const operator = await startOperator(kc, namespace, [WidgetChildren]);
    await handledWidgets(namespace, 1000, handledByDefault);
    await operator.stop();
    const childrenBefore = await childVersions(namespace);
    expect(childrenBefore.size).toBe(1000);

    const first = await disconnect(['-n', namespace, '--lease-namespace', namespace]);
    expect(first.code).toBe(0);
    expect(lastLine(first.run)).toBe(
      'disconnect: 1000 objects seen, 1000 released, 0 already clean, 0 failed',
    );
    const widgets = await listWidgets(namespace);
    expect(widgets.flatMap((w) => traces(w, 'konductor.dev'))).toEqual([]);
    expect(widgets.filter((w) => w.status?.phase === 'Ready')).toHaveLength(1000);
    const written = writes(first.requests);
    expect(written.filter((r) => !r.path.includes('/widgets/'))).toEqual([]);
    expect(written).toHaveLength(1000); // one JSON patch each: annotations and finalizer together
    expect(await childVersions(namespace)).toEqual(childrenBefore);

    const second = await disconnect(['-n', namespace, '--lease-namespace', namespace]);
    expect(second.code).toBe(0);
    expect(lastLine(second.run)).toBe(
      'disconnect: 1000 objects seen, 0 released, 1000 already clean, 0 failed',
    );
    expect(writes(second.requests)).toEqual([]);
  }, 300_000);

  test("an operator's own identity with status storage: its marker, annotations, status record and finalizer go; another operator's bookkeeping stays", async () => {
    const namespace = await uniqueNamespace(kc, 'disconnect-identity');
    const own = await startOperator(kc, namespace, [WidgetChildren], {
      identity: 'widgets.example.com',
      storage: 'status',
    });
    const other = await startOperator(kc, namespace, [WidgetStatus]);
    await handledWidgets(
      namespace,
      10,
      (w) =>
        Boolean(w.status?.['widgets.example.com']) &&
        (w.metadata?.finalizers ?? []).includes('widgets.example.com/finalizer') &&
        Boolean(w.metadata?.annotations?.['konductor.dev/last-handled-configuration']),
    );
    await own.stop();
    await other.stop();

    const { code, run } = await disconnect([
      '-n',
      namespace,
      '--lease-namespace',
      namespace,
      '--identity',
      'widgets.example.com',
    ]);
    expect(code).toBe(0);
    expect(lastLine(run)).toBe(
      'disconnect: 10 objects seen, 10 released, 0 already clean, 0 failed',
    );
    const widgets = await listWidgets(namespace);
    expect(widgets.flatMap((w) => traces(w, 'widgets.example.com'))).toEqual([]);
    expect(
      widgets.filter((w) => w.metadata?.annotations?.['konductor.dev/last-handled-configuration']),
    ).toHaveLength(10);
  }, 120_000);

  test('--dry-run prints one line per object it would release and writes nothing', async () => {
    const namespace = await uniqueNamespace(kc, 'disconnect-dry');
    const operator = await startOperator(kc, namespace, [WidgetChildren]);
    await handledWidgets(namespace, 3, handledByDefault);
    await operator.stop();

    const { code, run, requests } = await disconnect([
      '-n',
      namespace,
      '--lease-namespace',
      namespace,
      '--dry-run',
    ]);
    expect(code).toBe(0);
    const lines = run.stdout().trim().split('\n');
    expect(lines.slice(0, -1).sort()).toEqual(
      [0, 1, 2].map((i) =>
        expect.stringMatching(
          new RegExp(
            `^would release widgets\\.test\\.konductor\\.dev ${namespace}/w-${i}: finalizer konductor\\.dev/finalizer, \\d+ annotations?$`,
          ),
        ),
      ),
    );
    expect(lines.at(-1)).toBe(
      'disconnect (dry run, nothing written): 3 objects seen, 3 to release, 0 already clean, 0 failed',
    );
    expect(writes(requests)).toEqual([]);
    expect((await listWidgets(namespace)).filter(handledByDefault)).toHaveLength(3);
  }, 120_000);

  test('refuses while a leader holds the Lease, saying who holds it until when, and writes nothing', async () => {
    const namespace = await uniqueNamespace(kc, 'disconnect-leader');
    const operator = await startOperator(kc, namespace, [WidgetChildren], {
      leaderElection: { namespace, identity: 'operator-7d9f' },
    });
    try {
      await handledWidgets(namespace, 3, handledByDefault);
      const { code, run, requests } = await disconnect([
        '-n',
        namespace,
        '--lease-namespace',
        namespace,
      ]);
      expect(code).toBe(1);
      expect(run.stderr().trim().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(
            `^konductor: refusing to disconnect while the operator leads: "operator-7d9f" \\(Lease ${namespace}/konductor-leader, held until \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\)\\. .*stop it first .*, or pass --force$`,
          ),
        ),
      ]);
      expect(writes(requests)).toEqual([]);
      expect((await listWidgets(namespace)).filter(handledByDefault)).toHaveLength(3);
    } finally {
      await operator.stop();
    }
  }, 120_000);

  test("a tenant's Lease named like the operator's does not steer it: without --lease-namespace it asks for the operator's namespace, and never prints the tenant's text", async () => {
    const namespace = await uniqueNamespace(kc, 'disconnect-own');
    const tenant = await uniqueNamespace(kc, 'disconnect-tenant');
    const operator = await startOperator(kc, namespace, [WidgetChildren]);
    await handledWidgets(namespace, 3, handledByDefault);
    await operator.stop();
    const now = formatMicroTime(Date.now());
    const api = new ApiClient(kc);
    await api.request('POST', `/apis/coordination.k8s.io/v1/namespaces/${tenant}/leases`, {
      body: {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'konductor-leader' },
        spec: {
          holderIdentity: 'tenant-text',
          leaseDurationSeconds: 3600,
          acquireTime: now,
          renewTime: now,
        },
      },
    });
    api.close();

    const unscoped = await disconnect(['-n', namespace]);
    expect(unscoped.code).toBe(2);
    expect(unscoped.run.stderr()).toMatch(
      /^konductor: --lease-namespace is required outside a pod: give the operator's own namespace/,
    );
    expect(unscoped.run.stdout() + unscoped.run.stderr()).not.toContain('tenant-text');
    expect(writes(unscoped.requests)).toEqual([]);

    const scoped = await disconnect(['-n', namespace, '--lease-namespace', namespace]);
    expect(scoped.code).toBe(0);
    expect(lastLine(scoped.run)).toBe(
      'disconnect: 3 objects seen, 3 released, 0 already clean, 0 failed',
    );
  }, 120_000);

  test('--force releases the objects although a Lease is still held (an operator killed moments ago)', async () => {
    const namespace = await uniqueNamespace(kc, 'disconnect-force');
    const operator = await startOperator(kc, namespace, [WidgetChildren]);
    await handledWidgets(namespace, 3, handledByDefault);
    await operator.stop();
    const now = formatMicroTime(Date.now());
    const api = new ApiClient(kc);
    await api.request('POST', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, {
      body: {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'konductor-leader' },
        spec: {
          holderIdentity: 'operator-killed',
          leaseDurationSeconds: 3600,
          acquireTime: now,
          renewTime: now,
        },
      },
    });
    api.close();

    const refused = await disconnect(['-n', namespace, '--lease-namespace', namespace]);
    expect(refused.code).toBe(1);
    const forced = await disconnect(['-n', namespace, '--lease-namespace', namespace, '--force']);
    expect(forced.code).toBe(0);
    expect(forced.run.stdout()).toMatch(
      new RegExp(
        `^warning: --force: disconnecting while "operator-killed" \\(Lease ${namespace}/konductor-leader, held until `,
      ),
    );
    expect(lastLine(forced.run)).toBe(
      'disconnect: 3 objects seen, 3 released, 0 already clean, 0 failed',
    );
    expect((await listWidgets(namespace)).flatMap((w) => traces(w, 'konductor.dev'))).toEqual([]);
  }, 120_000);
});
