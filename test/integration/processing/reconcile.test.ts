import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  adopt,
  kinds,
  on,
  watch,
  type ChangeContext,
  type ReconcileContext,
} from '../../../src/framework/index.js';
import { sharedKubeConfig, statusOf, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { waitFor } from '../../support/wait-for.js';
import {
  getWidget,
  installWidgetCrd,
  readWidget,
  Widgets,
  WIDGET_API_VERSION,
  type Widget,
} from '../../support/widgets.js';

/** What the specs see of one reconcile run. */
interface Run {
  name: string;
  size: unknown;
  deleting: boolean;
}

/**
 * The commonest operator: each Widget keeps a ConfigMap of its size (put back when changed or
 * deleted), reads `<name>-settings` Secrets through the cache, and reports both in its status.
 */
function keeper(runs: Run[], options: { finalizer?: boolean } = {}) {
  return class Keepers {
    @on.reconcile(WIDGET_API_VERSION, 'widgets', {
      owns: [kinds.ConfigMap],
      watches: [
        watch(kinds.Secret, (secret) =>
          secret.metadata?.name?.endsWith('-settings')
            ? { name: secret.metadata.name.slice(0, -'-settings'.length) }
            : undefined,
        ),
      ],
      finalizer: options.finalizer,
    })
    async reconcile({
      name,
      namespace,
      spec,
      body,
      client,
      cache,
      patch,
      conditions,
      deleting,
    }: ReconcileContext<Widget>): Promise<void> {
      runs.push({ name, size: spec.size, deleting });
      if (deleting) return;
      const map = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace },
        data: { size: String(spec.size) },
      };
      await client.resource(kinds.ConfigMap).apply(adopt(map, body), { force: true });
      const settings = cache.resource(kinds.Secret).get({ namespace, name: `${name}-settings` });
      patch.status.settingKeys = Object.keys(settings?.data ?? {}).length;
      conditions.set('Synced', true, { message: `size ${String(spec.size)}` });
    }

    @on.create(WIDGET_API_VERSION, 'widgets')
    created({ patch }: ChangeContext<Widget>): void {
      patch.status.createdOnce = true;
    }
  };
}

describe('@on.reconcile', () => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  let operator: RunningOperator | undefined;
  beforeAll(async () => {
    kc = sharedKubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await installWidgetCrd(kc);
  });
  afterEach(async () => {
    await operator?.stop();
    operator = undefined;
  });

  async function configMapSize(namespace: string, name: string): Promise<string | undefined> {
    try {
      return (await core.readNamespacedConfigMap({ namespace, name })).data?.size;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  test('a new object is reconciled beside its create handler; its conditions and observedGeneration land in its status', async () => {
    const namespace = await uniqueNamespace(kc, 'rec-new');
    const runs: Run[] = [];
    operator = await startOperator(kc, namespace, [keeper(runs)]);

    await new Widgets(kc, namespace).create('w', { size: 3 });

    const widget = await waitFor(
      async () => {
        const current = await getWidget(namespace, 'w');
        return current.status?.observedGeneration === 1 && current.status.createdOnce
          ? current
          : undefined;
      },
      { what: 'the reconciled status' },
    );
    expect(await configMapSize(namespace, 'w')).toBe('3');
    expect(widget!.status?.conditions).toEqual([
      {
        type: 'Synced',
        status: 'True',
        observedGeneration: 1,
        lastTransitionTime: expect.stringMatching(/Z$/),
        reason: 'Synced',
        message: 'size 3',
      },
    ]);
    expect(widget!.metadata?.finalizers).toEqual(['konductor.dev/finalizer']);
  });

  test('objects that exist when the operator starts are reconciled', async () => {
    const namespace = await uniqueNamespace(kc, 'rec-resume');
    await new Widgets(kc, namespace).create('early', { size: 2 });
    const runs: Run[] = [];

    operator = await startOperator(kc, namespace, [keeper(runs)]);

    await waitFor(async () => (await configMapSize(namespace, 'early')) === '2', {
      what: 'the ConfigMap of a widget that existed before the start',
    });
  });

  test('a change to its owned child, or the child’s deletion, wakes the owner, which puts it back', async () => {
    const namespace = await uniqueNamespace(kc, 'rec-owns');
    const runs: Run[] = [];
    operator = await startOperator(kc, namespace, [keeper(runs)]);
    await new Widgets(kc, namespace).create('w', { size: 4 });
    await waitFor(async () => (await configMapSize(namespace, 'w')) === '4', {
      what: 'the first ConfigMap',
    });

    await core.patchNamespacedConfigMap({
      namespace,
      name: 'w',
      body: [{ op: 'replace', path: '/data/size', value: 'tampered' }],
    });
    await waitFor(async () => (await configMapSize(namespace, 'w')) === '4', {
      what: 'the ConfigMap put back after a change',
    });
    await core.deleteNamespacedConfigMap({ namespace, name: 'w' });
    await waitFor(async () => (await configMapSize(namespace, 'w')) === '4', {
      what: 'the ConfigMap put back after its deletion',
    });
  });

  test('a watched object wakes the objects its map function names', async () => {
    const namespace = await uniqueNamespace(kc, 'rec-watch');
    const runs: Run[] = [];
    operator = await startOperator(kc, namespace, [keeper(runs)]);
    await new Widgets(kc, namespace).create('w', { size: 1 });
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.settingKeys === 0, {
      what: 'the first reconcile',
    });

    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'w-settings' }, stringData: { a: '1', b: '2' } },
    });

    await waitFor(async () => (await getWidget(namespace, 'w')).status?.settingKeys === 2, {
      what: 'the reconcile woken by the Secret',
    });
  });

  test('a deleted object gets one last run with deleting while the finalizer holds it; with finalizer: false, none', async () => {
    const namespace = await uniqueNamespace(kc, 'rec-delete');
    const held: Run[] = [];
    const free: Run[] = [];
    operator = await startOperator(kc, namespace, [keeper(held)]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('w');
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.observedGeneration === 1, {
      what: 'the first reconcile',
    });

    await widgets.delete('w');
    await waitFor(async () => (await readWidget(namespace, 'w')) === undefined, {
      what: 'the widget gone',
    });
    expect(held.filter((run) => run.deleting)).toEqual([{ name: 'w', size: 1, deleting: true }]);

    await operator.stop();
    operator = await startOperator(kc, namespace, [keeper(free, { finalizer: false })]);
    await widgets.create('v');
    const unheld = await waitFor(
      async () => {
        const current = await getWidget(namespace, 'v');
        return current.status?.observedGeneration === 1 ? current : undefined;
      },
      { what: 'the reconcile without a finalizer' },
    );
    expect(unheld!.metadata?.finalizers).toBeUndefined();
    await widgets.delete('v');
    await waitFor(async () => (await readWidget(namespace, 'v')) === undefined, {
      what: 'the widget without a finalizer gone',
    });
    expect(free.filter((run) => run.deleting)).toEqual([]);
  });

  test('100 updates to one object make one run per minInterval at most, and the last run sees the last state', async () => {
    const namespace = await uniqueNamespace(kc, 'rec-burst');
    const runs: Run[] = [];
    operator = await startOperator(kc, namespace, [keeper(runs)]);
    const widgets = new Widgets(kc, namespace);
    await widgets.create('w', { size: 0 });
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.observedGeneration === 1, {
      what: 'the first reconcile',
    });
    const before = runs.length;

    const began = performance.now();
    for (let size = 1; size <= 100; size++) await widgets.patchSpec('w', { size });
    await waitFor(
      async () =>
        runs[runs.length - 1]?.size === 100 &&
        (await getWidget(namespace, 'w')).status?.observedGeneration === 101,
      { what: 'the run of the last state' },
    );
    const elapsed = performance.now() - began;

    // Runs start at least minInterval (200 ms) apart: a real upper bound whatever the machine's speed.
    expect(runs.length - before).toBeLessThanOrEqual(Math.ceil(elapsed / 200) + 1);
    expect(runs.length - before).toBeLessThan(100);
  });

  test('with status storage and an identity, the finalizer is that identity’s', async () => {
    const namespace = await uniqueNamespace(kc, 'rec-identity');
    const runs: Run[] = [];
    operator = await startOperator(kc, namespace, [keeper(runs)], {
      identity: 'widgets.example.com',
      storage: 'status',
    });

    await new Widgets(kc, namespace).create('w', { size: 5 });

    const widget = await waitFor(
      async () => {
        const current = await getWidget(namespace, 'w');
        return current.status?.observedGeneration === 1 && current.status.createdOnce
          ? current
          : undefined;
      },
      { what: 'the reconciled status' },
    );
    expect(widget!.metadata?.finalizers).toEqual(['widgets.example.com/finalizer']);
    expect(await configMapSize(namespace, 'w')).toBe('5');
  });
});
