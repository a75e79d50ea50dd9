import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
} from '@kubernetes/client-node';
import { on, timer, type ChangeContext, type TimerContext } from '../../../src/framework/index.js';
import { resolveControllerManager } from '../../../src/testing/binaries.js';
import { runOperator, TestControlPlane, type TestOperator } from '../../../src/testing/index.js';
import type { LedgerEntry } from '../../fixtures/handlers/ledger-widgets.js';
import { exitWithin, killChildGroup, spawnKonductor } from '../../support/cli.js';
import { statusOf, uniqueNamespace } from '../../support/cluster.js';
import { LogCapture } from '../../support/log-capture.js';
import { waitFor } from '../../support/wait-for.js';
import {
  installWidgetCrd,
  WIDGET_API_VERSION,
  widgetIds,
  Widgets,
  type Widget,
} from '../../support/widgets.js';
import { type HandlerClass } from '../../../src/framework/registry/registry.js';

/**
 * Stopping never leaves a namespace stuck: a stopping operator finishes the deletions under way (their
 * delete handlers run), then releases the finalizers of objects no instance will come back for; timers
 * and daemons that need no graceful stop hold no finalizer at all. Namespace deletion needs the
 * namespace controller, so these specs run on a plane of their own with kube-controller-manager (or,
 * where it is not built, do its part themselves: see `deleteNamespace`).
 */

const root = fileURLToPath(new URL('../../..', import.meta.url));
const FINALIZER = 'konductor.dev/finalizer';

let plane: TestControlPlane;
let kc: KubeConfig;
let core: CoreV1Api;
let custom: CustomObjectsApi;
const running: TestOperator[] = [];
const children: ChildProcess[] = [];

/** Whether this machine has a kube-controller-manager for the plane; without one the spec does its namespace controller's part. */
function controllerManagerAvailable(): boolean {
  try {
    resolveControllerManager();
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  plane = await TestControlPlane.start({ controllerManager: controllerManagerAvailable() });
  kc = plane.kubeConfig();
  core = kc.makeApiClient(CoreV1Api);
  custom = kc.makeApiClient(CustomObjectsApi);
  await installWidgetCrd(kc);
}, 120_000);

afterEach(async () => {
  for (const child of children.splice(0)) killChildGroup(child);
  await Promise.all(running.splice(0).map((operator) => operator.stop()));
});

afterAll(async () => {
  await plane?.stop();
});

async function readWidget(namespace: string, name: string): Promise<Widget | undefined> {
  try {
    return (await custom.getNamespacedCustomObject({ ...widgetIds, namespace, name })) as Widget;
  } catch (error) {
    if (statusOf(error) === 404) return undefined;
    throw error;
  }
}

async function widgetsIn(namespace: string): Promise<Widget[]> {
  return (
    (await custom.listNamespacedCustomObject({ ...widgetIds, namespace })) as { items: Widget[] }
  ).items;
}

async function namespaceGone(name: string): Promise<boolean> {
  try {
    await core.readNamespace({ name });
    return false;
  } catch (error) {
    if (statusOf(error) === 404) return true;
    throw error;
  }
}

/**
 * Deletes a namespace. With the controller manager its namespace controller deletes what is in it and
 * then the namespace; without one (it is not built on every machine) the spec does the same itself:
 * it deletes the namespace's widgets, Leases and ConfigMaps until no widget is left (finalizers hold
 * them until released), then finalizes the namespace, as the namespace controller does.
 */
async function deleteNamespace(name: string): Promise<void> {
  await core.deleteNamespace({ name });
  if (plane.controllerManager) return;
  void (async () => {
    const coordination = kc.makeApiClient(CoordinationV1Api);
    for (;;) {
      const left = await widgetsIn(name).catch(() => []);
      for (const widget of left)
        if (!widget.metadata?.deletionTimestamp)
          await custom
            .deleteNamespacedCustomObject({
              ...widgetIds,
              namespace: name,
              name: widget.metadata!.name!,
            })
            .catch(() => undefined);
      await coordination
        .deleteCollectionNamespacedLease({ namespace: name })
        .catch(() => undefined);
      await core.deleteCollectionNamespacedConfigMap({ namespace: name }).catch(() => undefined);
      if (left.length === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await core
      .replaceNamespaceFinalize({ name, body: { metadata: { name }, spec: { finalizers: [] } } })
      .catch(() => undefined);
  })();
}

async function start(
  handlers: HandlerClass[],
  namespaces: string[],
  log = new LogCapture(),
): Promise<TestOperator> {
  const operator = await runOperator({ kubeConfig: kc, handlers, namespaces, logger: log.logger });
  running.push(operator);
  return operator;
}

/** Stops an operator as SIGTERM does (with the CLI's 30 s deadline unless told), and takes it out of the cleanup list. */
async function stopAsOnSigterm(operator: TestOperator, deadlineMs = 30_000): Promise<void> {
  running.splice(running.indexOf(operator), 1);
  await operator.operator.stop(deadlineMs);
}

describe('timers and daemons with finalizer: false', () => {
  test('an object with only such a timer carries no finalizer and is deleted at once while the operator is down', async () => {
    const namespace = await uniqueNamespace(kc, 'no-finalizer');
    let ticks = 0;
    class Refresh {
      @timer(WIDGET_API_VERSION, 'widgets', { interval: 0.2, finalizer: false })
      refresh({ patch }: TimerContext): void {
        ticks += 1;
        patch.status.refreshed = ticks;
      }
    }
    const operator = await start([Refresh], [namespace]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('w1');
    await waitFor(
      async () => (await readWidget(namespace, 'w1'))?.status?.refreshed !== undefined,
      { what: 'the timer to run on w1' },
    );
    expect((await readWidget(namespace, 'w1'))?.metadata?.finalizers ?? []).toEqual([]);

    await stopAsOnSigterm(operator);
    await widgets.delete('w1');

    expect(await readWidget(namespace, 'w1')).toBeUndefined();
  });
});

describe('a stopping operator finishes the deletions under way', () => {
  test('objects deleted just before the stop have their delete handlers run and are gone when it returns', async () => {
    const namespace = await uniqueNamespace(kc, 'finish');
    const cleaned: string[] = [];
    class Cleanup {
      @on.deletion(WIDGET_API_VERSION, 'widgets')
      async deleted({ name }: ChangeContext): Promise<void> {
        await new Promise((resolve) => setTimeout(resolve, 200)); // some cleanup work
        cleaned.push(name);
      }
    }
    const operator = await start([Cleanup], [namespace]);
    const widgets = new Widgets(kc, namespace);
    await widgets.createMany('w', 10);
    await waitFor(
      async () =>
        (await widgetsIn(namespace)).every((w) => w.metadata?.finalizers?.includes(FINALIZER)),
      { what: 'every widget to carry the finalizer' },
    );

    await Promise.all(Array.from({ length: 10 }, (_, i) => widgets.delete(`w-${i}`)));
    await stopAsOnSigterm(operator);

    expect(cleaned.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `w-${i}`).sort());
    expect(await widgetsIn(namespace)).toEqual([]);
  });
});

/** A delete handler that cannot finish (its external system is gone, say): it fails on every attempt. */
class FailingCleanup {
  @on.deletion(WIDGET_API_VERSION, 'widgets')
  deleted(): void {
    throw new Error('the external system is unreachable');
  }
}

describe('what a stopped operator releases', () => {
  test('an object whose namespace is being deleted is released, and the log names it and says why', async () => {
    const namespace = await uniqueNamespace(kc, 'released');
    const log = new LogCapture();
    const operator = await start([FailingCleanup], [namespace], log);
    await new Widgets(kc, namespace).create('stuck');
    await waitFor(
      async () => (await readWidget(namespace, 'stuck'))?.metadata?.finalizers?.includes(FINALIZER),
      { what: 'the widget to carry the finalizer' },
    );
    await deleteNamespace(namespace);
    await waitFor(async () => (await readWidget(namespace, 'stuck'))?.metadata?.deletionTimestamp, {
      what: 'the namespace controller to delete the widget',
      timeoutMs: 30_000,
    });

    await stopAsOnSigterm(operator, 5_000);

    const released = log.containing(`released the finalizer of ${namespace}/stuck`);
    expect(released.map((line) => line.msg)).toEqual([
      `released the finalizer of ${namespace}/stuck: its namespace is being deleted and the operator stopped before its delete handlers finished`,
    ]);
    await waitFor(() => namespaceGone(namespace), {
      what: `namespace ${namespace} to be gone`,
      timeoutMs: 60_000,
    });
  }, 120_000);

  test('an object being deleted in a healthy namespace keeps its finalizer, for the next operator instance', async () => {
    const namespace = await uniqueNamespace(kc, 'kept');
    const log = new LogCapture();
    const operator = await start([FailingCleanup], [namespace], log);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('waiting');
    await waitFor(
      async () =>
        (await readWidget(namespace, 'waiting'))?.metadata?.finalizers?.includes(FINALIZER),
      { what: 'the widget to carry the finalizer' },
    );
    await widgets.delete('waiting');

    await stopAsOnSigterm(operator, 3_000);

    const widget = await readWidget(namespace, 'waiting');
    expect(widget?.metadata?.deletionTimestamp).toBeDefined();
    expect(widget?.metadata?.finalizers).toEqual([FINALIZER]);
    expect(log.containing('released the finalizer')).toEqual([]);
    expect(
      log.containing('stopping with 1 deletion(s) unfinished').map((line) => line.msg),
    ).toEqual([`stopping with 1 deletion(s) unfinished: ${namespace}/waiting`]);
  });
});

describe('deleting the namespace an operator runs in', () => {
  test('50 objects with the finalizer and the operator process (POD_NAMESPACE) in one namespace: on SIGTERM the namespace is gone within the grace period plus 10 s, 0 objects left', async () => {
    const GRACE_PERIOD_MS = 40_000; // terminationGracePeriodSeconds of the Deployment `konductor manifests` writes
    const namespace = await uniqueNamespace(kc, 'operator-home');
    const scratch = mkdtempSync(join(tmpdir(), 'konductor-release-'));
    const ledger = join(scratch, 'ledger.jsonl');
    try {
      const args = [
        'run',
        'test/fixtures/handlers/ledger-widgets.ts',
        '--kubeconfig',
        plane.kubeconfigPath,
        '-n',
        namespace,
        '--lease-namespace',
        namespace,
        '--health-port',
        '0',
        '--log-format',
        'json',
      ];
      const run = spawnKonductor('bin/konductor.mjs', args, {
        cwd: root,
        detached: true,
        env: { POD_NAMESPACE: namespace, CHAOS_LEDGER: ledger },
      });
      children.push(run.child);
      await new Widgets(kc, namespace).createMany('w', 50);
      await waitFor(
        async () =>
          (await widgetsIn(namespace)).filter(
            (w) =>
              w.status?.handledSize !== undefined && w.metadata?.finalizers?.includes(FINALIZER),
          ).length === 50,
        {
          what: 'the operator to handle all 50 widgets',
          timeoutMs: 60_000,
        },
      );

      // The namespace controller deletes the namespace's objects, the operator's pod among them: the kubelet sends SIGTERM.
      await deleteNamespace(namespace);
      const signalledAt = Date.now();
      run.child.kill('SIGTERM');

      await waitFor(() => namespaceGone(namespace), {
        what: `namespace ${namespace} to be gone`,
        timeoutMs: GRACE_PERIOD_MS + 10_000,
      });
      const goneAfterMs = Date.now() - signalledAt;
      expect(await exitWithin(run, GRACE_PERIOD_MS)).toBe(0);
      expect(await widgetsIn(namespace)).toEqual([]);
      const deletes = readFileSync(ledger, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as LedgerEntry)
        .filter((entry) => entry.kind === 'delete' && entry.at === 'done');
      const released = run
        .stdout()
        .split('\n')
        .filter((line) => line.includes('released the finalizer of')).length;
      // Every widget was either handled (its delete handler ran) or released (and logged): none was left behind unaccounted.
      expect(new Set(deletes.map((entry) => entry.name)).size + released).toBeGreaterThanOrEqual(
        50,
      );
      console.log(
        `namespace gone ${goneAfterMs} ms after SIGTERM; delete handlers run: ${deletes.length}; finalizers released: ${released}`,
      );
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 180_000);
});
