import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1ConfigMap,
  type V1OwnerReference,
} from '@kubernetes/client-node';
import {
  createOperator,
  on,
  silentLogger,
  type EventContext,
  type KubeObject,
  type OwnedContext,
  type Operator,
} from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import {
  getWidget,
  installWidgetCrd,
  Widgets,
  WIDGET_API_VERSION,
  type Widget,
} from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

/** What a spec sees of one owned run. */
interface OwnedRun {
  owner: string;
  event: string;
  child: string;
  value: string | undefined;
  changes: string[];
}

/** Records every run of the owned handler; it writes the child's value to the owner's status. */
function recorder(runs: OwnedRun[], hold?: () => Promise<void>) {
  return class Owners {
    @on.owned(WIDGET_API_VERSION, 'widgets', { child: ['v1', 'configmaps'] })
    async configChanged({
      name,
      event,
      child,
      changes,
      patch,
    }: OwnedContext<Widget, ConfigMap>): Promise<void> {
      runs.push({
        owner: name,
        event,
        child: child.metadata?.name ?? '',
        value: child.data?.value,
        changes: changes.map((c) => `${c.event} ${c.child.metadata?.name}`),
      });
      await hold?.();
      patch.status.config = event === 'DELETED' ? 'gone' : (child.data?.value ?? null);
    }
  };
}

class ConfigMaps {
  private readonly core: CoreV1Api;
  constructor(
    kc: KubeConfig,
    private readonly namespace: string,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** A ConfigMap with `ownerReferences` set by hand, as `adopt` would. */
  create(name: string, value: string, ownerReferences: V1OwnerReference[]): Promise<V1ConfigMap> {
    return this.core.createNamespacedConfigMap({
      namespace: this.namespace,
      body: { metadata: { name, ownerReferences }, data: { value } },
    });
  }

  set(name: string, value: string): Promise<V1ConfigMap> {
    return this.core.patchNamespacedConfigMap(
      { namespace: this.namespace, name, body: { data: { value } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  delete(name: string): Promise<unknown> {
    return this.core.deleteNamespacedConfigMap({ namespace: this.namespace, name });
  }
}

function ownedBy(
  owner: Widget,
  fields: { controller?: boolean; kind?: string } = {},
): V1OwnerReference[] {
  return [
    {
      apiVersion: WIDGET_API_VERSION,
      kind: fields.kind ?? 'Widget',
      name: owner.metadata?.name ?? '',
      uid: owner.metadata?.uid ?? '',
      controller: fields.controller ?? true,
    },
  ];
}

describe('@on.owned handlers', () => {
  let operator: Operator | undefined;
  afterEach(async () => {
    await operator?.stop(1_000);
    operator = undefined;
  });

  async function setUp(prefix: string) {
    const kc = sharedKubeConfig();
    await installWidgetCrd(kc);
    const namespace = await uniqueNamespace(kc, prefix);
    return {
      kc,
      namespace,
      widgets: new Widgets(kc, namespace),
      configMaps: new ConfigMaps(kc, namespace),
    };
  }

  function start(kc: KubeConfig, namespace: string, handler: new () => object): Promise<void> {
    operator = createOperator({
      kubeConfig: kc,
      handlers: [handler],
      namespaces: [namespace],
      logger: silentLogger(),
    }).start();
    return operator.ready;
  }

  test('children found by the initial listing run the owner once, as ADDED', async () => {
    const { kc, namespace, widgets, configMaps } = await setUp('owned-list');
    const owner = await widgets.create('w');
    await configMaps.create('settings', 'one', ownedBy(owner));
    const runs: OwnedRun[] = [];

    await start(kc, namespace, recorder(runs));
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === 'one', {
      what: "the owner's patch from the listed child",
    });

    expect(runs).toEqual([
      { owner: 'w', event: 'ADDED', child: 'settings', value: 'one', changes: ['ADDED settings'] },
    ]);
  });

  test('changing an owned ConfigMap runs the owner with the new child as MODIFIED, and the owner’s patch lands', async () => {
    const { kc, namespace, widgets, configMaps } = await setUp('owned-mod');
    const runs: OwnedRun[] = [];
    await start(kc, namespace, recorder(runs));
    const owner = await widgets.create('w');
    await configMaps.create('settings', 'one', ownedBy(owner));
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === 'one', {
      what: 'the run for the new child',
    });

    await configMaps.set('settings', 'two');
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === 'two', {
      what: "the owner's patch for the change",
    });

    expect(runs.at(-1)).toEqual({
      owner: 'w',
      event: 'MODIFIED',
      child: 'settings',
      value: 'two',
      changes: ['MODIFIED settings'],
    });
  });

  test('deleting an owned ConfigMap runs the owner with DELETED', async () => {
    const { kc, namespace, widgets, configMaps } = await setUp('owned-del');
    const runs: OwnedRun[] = [];
    await start(kc, namespace, recorder(runs));
    const owner = await widgets.create('w');
    await configMaps.create('settings', 'one', ownedBy(owner));
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === 'one', {
      what: 'the run for the new child',
    });

    await configMaps.delete('settings');
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === 'gone', {
      what: 'the run for the deletion',
    });

    expect(runs.at(-1)).toMatchObject({
      owner: 'w',
      event: 'DELETED',
      child: 'settings',
      value: 'one',
    });
  });

  test("a handler that fails is run again with the same child change, without another change, and the owner's patch lands", async () => {
    const { kc, namespace, widgets, configMaps } = await setUp('owned-retry');
    const runs: OwnedRun[] = [];
    let failures = 1;
    await start(
      kc,
      namespace,
      recorder(runs, async () => {
        if (failures-- > 0) throw new Error('the child is not ready yet');
      }),
    );
    const owner = await widgets.create('w');
    await configMaps.create('settings', 'one', ownedBy(owner));

    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === 'one', {
      what: "the owner's patch after the retry",
    });

    expect(runs.map((run) => `${run.event} ${run.child} ${run.value}`)).toEqual([
      'ADDED settings one',
      'ADDED settings one',
    ]);
  });

  test('a ConfigMap controlled by another kind, or referencing the owner without controller: true, runs nothing', async () => {
    const { kc, namespace, widgets, configMaps } = await setUp('owned-other');
    const runs: OwnedRun[] = [];
    await start(kc, namespace, recorder(runs));
    const owner = await widgets.create('w');

    await configMaps.create('other-kind', 'x', ownedBy(owner, { kind: 'Gadget' }));
    await configMaps.create('not-controller', 'y', ownedBy(owner, { controller: false }));
    await configMaps.set('other-kind', 'x2');
    await configMaps.set('not-controller', 'y2');
    // The same watch delivers events in order: once the owned child's run is seen, the others had their chance.
    await configMaps.create('owned', 'z', ownedBy(owner));
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === 'z', {
      what: 'the run for the owned child',
    });

    expect(runs.flatMap((run) => run.changes)).toEqual(['ADDED owned']);
  });

  test('with handlers of their own on the child resource, the children’s listing and watch are shared, and both run', async () => {
    const { kc, namespace, widgets, configMaps } = await setUp('owned-shared');
    const runs: OwnedRun[] = [];
    const observed: string[] = [];
    const Owned = recorder(runs);
    class Observer {
      @on.event('v1', 'configmaps')
      seen({ type, name }: EventContext<ConfigMap>): void {
        observed.push(`${type} ${name}`);
      }
    }
    const lists: string[] = [];
    operator = createOperator({
      kubeConfig: kc,
      handlers: [Owned, Observer],
      namespaces: [namespace],
      logger: silentLogger(),
      onRequest: (method, path) =>
        void (method === 'GET' && /\/configmaps(\?|$)/.test(path) && lists.push(path)),
    }).start();
    await operator.ready;
    const owner = await widgets.create('w');

    await configMaps.create('settings', 'one', ownedBy(owner));
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === 'one', {
      what: 'the owned run',
    });
    await waitFor(() => observed.includes('ADDED settings'), { what: 'the event handler' });

    expect(lists).toHaveLength(1);
  });

  test('a burst of 20 child changes runs the owner fewer than 20 times, and the last run sees the last state', async () => {
    const { kc, namespace, widgets, configMaps } = await setUp('owned-burst');
    const runs: OwnedRun[] = [];
    // The first run of the burst is held until every change was made, so the rest can only coalesce.
    const gate: { held?: Promise<void>; release: () => void } = { release: () => undefined };
    const hold = (): Promise<void> => gate.held ?? Promise.resolve();
    await start(kc, namespace, recorder(runs, hold));
    const owner = await widgets.create('w');
    await configMaps.create('settings', '0', ownedBy(owner));
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === '0', {
      what: 'the run for the new child',
    });
    const before = runs.length;

    gate.held = new Promise((resolve) => (gate.release = resolve));
    for (let i = 1; i <= 20; i++) await configMaps.set('settings', String(i));
    gate.release();
    await waitFor(async () => (await getWidget(namespace, 'w')).status?.config === '20', {
      what: 'the run for the last change',
    });

    const burst = runs.slice(before);
    expect(burst.length).toBeLessThan(20);
    expect(burst.at(-1)).toMatchObject({ event: 'MODIFIED', value: '20' });
  });
});
