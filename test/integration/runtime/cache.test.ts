import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import {
  on,
  type ChangeContext,
  type EventContext,
  type IndexContext,
  type KubeObject,
} from '../../../src/framework/index.js';
import { sharedKubeConfig, uniqueNamespace } from '../../support/cluster.js';
import { startOperator, type RunningOperator } from '../../support/operators.js';
import { Widgets, WIDGET_API_VERSION } from '../../support/widgets.js';
import { waitFor } from '../../support/wait-for.js';
import { widgetNamespace } from '../../support/widget-namespace.js';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

function configMaps(kc: KubeConfig, namespace: string) {
  const api = kc.makeApiClient(CoreV1Api);
  return {
    create: (
      name: string,
      labels: Record<string, string> = {},
      data: Record<string, string> = {},
    ) => api.createNamespacedConfigMap({ namespace, body: { metadata: { name, labels }, data } }),
    relabel: (name: string, labels: Record<string, string | null>) =>
      api.patchNamespacedConfigMap(
        { namespace, name, body: { metadata: { labels } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    delete: (name: string) => api.deleteNamespacedConfigMap({ namespace, name }),
  };
}

describe('the read cache and indexes', () => {
  const running: RunningOperator[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((operator) => operator.stop()));
  });

  test('a handler reads a ConfigMap watched for the cache alone (@on.cache), with no GET or LIST request', async () => {
    const { kc, namespace } = await widgetNamespace('cache-read');
    await configMaps(kc, namespace).create('settings', {}, { colour: 'blue' });
    const seen: Array<string | undefined> = [];

    @on.cache('v1', 'configmaps')
    class Painter {
      @on.create(WIDGET_API_VERSION, 'widgets')
      created({ cache, namespace: ns }: ChangeContext): void {
        seen.push(
          cache.resource<ConfigMap>('v1', 'configmaps').get({ namespace: ns!, name: 'settings' })
            ?.data?.colour,
        );
      }
    }
    const operator = await startOperator(kc, namespace, [Painter]);
    running.push(operator);
    const before = operator.requests.length;
    await new Widgets(kc, namespace).create('w');
    await waitFor(() => seen.length === 1, { what: 'the create handler' });

    expect(seen).toEqual(['blue']);
    expect(operator.requests.slice(before).filter((request) => request.method === 'GET')).toEqual(
      [],
    );
  }, 60_000);

  test('the cache lists handled resources by label, sees nothing outside the operator’s namespaces, and names what to declare', async () => {
    const { kc, namespace } = await widgetNamespace('cache-list');
    const elsewhere = await uniqueNamespace(kc, 'cache-other');
    const widgets = new Widgets(kc, namespace);
    await widgets.createLabelled('red', { colour: 'red' });
    await widgets.createLabelled('blue', { colour: 'blue' });
    await new Widgets(kc, elsewhere).createLabelled('red', { colour: 'red' });

    class Observer {
      @on.event(WIDGET_API_VERSION, 'widgets')
      observed(_context: EventContext): void {}
    }
    const { operator } = await startOperator(kc, namespace, [Observer]).then(
      (o) => (running.push(o), o),
    );
    const cached = operator.cache.resource(WIDGET_API_VERSION, 'Widget');

    expect(
      cached
        .list({ labelSelector: 'colour=red' })
        .map((w) => `${w.metadata?.namespace}/${w.metadata?.name}`),
    ).toEqual([`${namespace}/red`]);
    expect(
      cached
        .list()
        .map((w) => w.metadata?.name)
        .sort(),
    ).toEqual(['blue', 'red']);
    expect(cached.get({ namespace: elsewhere, name: 'red' })).toBeUndefined();
    expect(() => operator.cache.resource('v1', 'secrets')).toThrow(
      "declare it with @on.cache('v1', 'secrets')",
    );
  }, 60_000);

  test('an index of ConfigMaps by label stays current through create, update and delete', async () => {
    const kc = sharedKubeConfig();
    const namespace = await uniqueNamespace(kc, 'index-live');
    const maps = configMaps(kc, namespace);

    class Teams {
      @on.index('v1', 'configmaps')
      byTeam({ labels, name }: IndexContext) {
        return labels.team ? { [labels.team]: name } : undefined;
      }
    }
    const { operator } = await startOperator(kc, namespace, [Teams]).then(
      (o) => (running.push(o), o),
    );
    const index = operator.indexes.get<string>('Teams.byTeam');

    await maps.create('one', { team: 'a' });
    await maps.create('two', { team: 'a' });
    await waitFor(() => index.get('a').length === 2, { what: 'both ConfigMaps under team a' });
    await maps.relabel('one', { team: 'b' });
    await waitFor(() => index.get('b').length === 1, { what: 'one under team b' });
    expect(index.get('a')).toEqual(['two']);
    await maps.delete('two');
    await waitFor(() => !index.has('a'), { what: 'team a to empty' });
    expect([...index.keys()]).toEqual(['b']);
    expect(index.get('b')).toEqual(['one']);
  }, 60_000);

  test('after a restart, the index is complete before the first handler runs', async () => {
    const { kc, namespace } = await widgetNamespace('index-restart');
    const maps = configMaps(kc, namespace);
    await Promise.all(Array.from({ length: 20 }, (_, i) => maps.create(`m${i}`, { team: 'a' })));
    await new Widgets(kc, namespace).create('w');
    const firstSight: number[] = [];

    class Teams {
      @on.index('v1', 'configmaps')
      byTeam({ labels, name }: IndexContext) {
        return labels.team ? { [labels.team]: name } : undefined;
      }
      @on.event(WIDGET_API_VERSION, 'widgets')
      observed({ indexes }: EventContext): void {
        firstSight.push(indexes.get('Teams.byTeam').get('a').length);
      }
    }
    // One object per page: the index's listing takes 30 requests, the widgets' one.
    const options = { watch: { pageSize: 1 } };
    const first = await startOperator(kc, namespace, [Teams], options);
    await waitFor(() => firstSight.length === 1, { what: 'the first operator’s handler' });
    await first.stop();
    await Promise.all(Array.from({ length: 10 }, (_, i) => maps.create(`n${i}`, { team: 'a' })));
    await maps.delete('m0');

    running.push(await startOperator(kc, namespace, [Teams], options));
    await waitFor(() => firstSight.length === 2, { what: 'the restarted operator’s handler' });
    expect(firstSight).toEqual([20, 29]);
  }, 60_000);
});
