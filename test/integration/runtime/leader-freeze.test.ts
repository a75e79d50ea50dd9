import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from '../../../src/framework/api/api-client.js';
import type { Lease } from '../../../src/framework/runtime/leader-election.js';
import { TestControlPlane } from '../../../src/testing/index.js';
import { exitWithin, killChildGroup, spawnKonductor, type Run } from '../../support/cli.js';
import { installWidgetCrd, Widgets, type Widget } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const fixture = 'test/fixtures/handlers/widget-status.ts';
const NAMESPACE = 'lease-freeze';
const LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases/konductor-leader`;
/** As on the CPU-starved machine where `konductor run` used to exit: shorter than the Lease. */
const FREEZE_MS = 10_000;
/** Past any renew deadline (20 s) counted from a renewal before the freeze, had the leader been going to give up. */
const WATCH_AFTER_FREEZE_MS = 25_000;

// SIGSTOP freezes the whole API server, so this spec runs on a control plane of its own.
let plane: TestControlPlane;
let api: ApiClient;
let run: Run | undefined;

beforeAll(async () => {
  plane = await TestControlPlane.start();
  api = new ApiClient(plane.kubeConfig());
  await installWidgetCrd(plane.kubeConfig());
  await api.request('POST', '/api/v1/namespaces', {
    body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
  });
}, 120_000);

afterAll(async () => {
  plane.apiServer.signal('SIGCONT');
  if (run) killChildGroup(run.child);
  api.close();
  await plane.stop();
});

async function readLease(): Promise<Lease> {
  return api.request<Lease>('GET', LEASE_PATH);
}

async function phase(name: string): Promise<string | undefined> {
  const widget = await api
    .request<Widget>('GET', `/apis/test.konductor.dev/v1/namespaces/${NAMESPACE}/widgets/${name}`)
    .catch(() => undefined);
  return widget?.status?.phase as string | undefined;
}

/** The messages of the operator's JSON log lines so far. */
function messages(of: Run): string[] {
  return of
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { msg?: string }).msg ?? '');
}

/** Fails at once, with what the operator said last, if it has exited: waiting on would only time out. */
function stillRunning(of: Run): true {
  if (of.child.exitCode !== null || of.child.signalCode !== null) {
    throw new Error(
      `the operator exited (${of.child.exitCode ?? of.child.signalCode}); its last messages: ${JSON.stringify(messages(of).slice(-5))}`,
    );
  }
  return true;
}

describe('konductor run on the default Lease timings while its API server freezes', () => {
  test(`for ${FREEZE_MS / 1000} s (SIGSTOP): it keeps leading (no stop, no exit, the same holder) and handles a change made right after`, async () => {
    const widgets = new Widgets(plane.kubeConfig(), NAMESPACE);
    const args = [
      'run',
      fixture,
      '--kubeconfig',
      plane.kubeconfigPath,
      '-n',
      NAMESPACE,
      '--lease-namespace',
      NAMESPACE,
      '--log-format',
      'json',
      '--health-port',
      '0',
    ];
    const operator = spawnKonductor('bin/konductor.mjs', args, { cwd: root, detached: true });
    run = operator;
    await waitFor(() => messages(operator).includes('leading: starting work'), {
      what: 'the operator to lead',
      timeoutMs: 60_000,
    });
    await widgets.create('before');
    await waitFor(async () => (await phase('before')) === 'Ready', {
      what: 'the widget made before the freeze to be handled',
      timeoutMs: 30_000,
    });
    const before = (await readLease()).spec!;
    expect(before.holderIdentity).toBeTruthy();

    plane.apiServer.signal('SIGSTOP');
    const frozenAt = Date.now();
    try {
      await sleep(FREEZE_MS);
    } finally {
      plane.apiServer.signal('SIGCONT');
    }
    const thawedAt = Date.now();

    // A renewal started after the SIGSTOP can only have landed after the SIGCONT.
    const renewed = (async () => {
      await waitFor(
        async () =>
          stillRunning(operator) &&
          Date.parse((await readLease()).spec?.renewTime ?? '') >= frozenAt,
        {
          what: 'a renewal after the freeze',
          timeoutMs: 30_000,
          intervalMs: 50,
        },
      );
      return Date.now() - thawedAt;
    })();
    await widgets.create('after');
    const renewedAfterMs = await renewed;
    await waitFor(async () => stillRunning(operator) && (await phase('after')) === 'Ready', {
      what: 'the widget made right after the freeze to be handled',
      timeoutMs: 30_000,
    });
    await sleep(Math.max(0, frozenAt + FREEZE_MS + WATCH_AFTER_FREEZE_MS - Date.now()));

    const after = (await readLease()).spec!;
    const recovered = messages(operator).filter((msg) => msg.startsWith('renewed the lease again'));
    console.log(
      `leader freeze: API server SIGSTOPped ${thawedAt - frozenAt} ms; the Lease was renewed ${renewedAfterMs} ms after SIGCONT ` +
        `(polled every 50 ms); operator said ${JSON.stringify(recovered)}`,
    );
    expect(operator.child.exitCode).toBeNull();
    expect(
      messages(operator).filter((msg) =>
        /stopped leading|lost leadership|could not renew the lease in time/.test(msg),
      ),
    ).toEqual([]);
    expect(after.holderIdentity).toBe(before.holderIdentity);
    expect(after.leaseTransitions).toBe(before.leaseTransitions);
    expect(Date.parse(after.renewTime!)).toBeGreaterThan(frozenAt + FREEZE_MS);

    operator.child.kill('SIGTERM');
    expect(await exitWithin(operator, 30_000)).toBe(0);
  }, 180_000);
});
