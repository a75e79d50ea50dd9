import { on, Registry, type IndexContext } from '../../../src/framework/index.js';

describe('@on.cache and @on.index in the registry', () => {
  test('a class with only @on.cache is accepted and its resource is watched for the cache', () => {
    @on.cache('v1', 'configmaps', { labelSelector: 'app=widgets' })
    class Settings {}
    const registry = new Registry().addClass(Settings);
    expect(registry.caches).toEqual([
      {
        resource: { apiVersion: 'v1', name: 'configmaps' },
        options: { labelSelector: 'app=widgets', fieldSelector: undefined },
      },
    ]);
    expect(registry.handlers).toEqual([]);
  });

  test('an index is named Class.method unless given an id, and its function is bound to the instance', () => {
    class Pods {
      prefix = 'app:';
      @on.index('v1', 'pods')
      byApp({ labels }: IndexContext) {
        return { [`${this.prefix}${labels.app}`]: 1 };
      }
      @on.index('v1', 'pods', { id: 'nodes' })
      byNode() {
        return undefined;
      }
    }
    const registry = new Registry().addClass(Pods);
    expect(registry.indexes.map((spec) => spec.id)).toEqual(['Pods.byApp', 'nodes']);
    const context = { labels: { app: 'db' } } as unknown as IndexContext;
    expect(registry.indexes[0]!.fn(context)).toEqual({ 'app:db': 1 });
  });

  test('two indexes with one id are refused: handlers find indexes by id', () => {
    class A {
      @on.index('v1', 'pods', { id: 'same' })
      one() {
        return undefined;
      }
    }
    class B {
      @on.index('v1', 'configmaps', { id: 'same' })
      two() {
        return undefined;
      }
    }
    expect(() => new Registry().addClass(A).addClass(B)).toThrow(
      "index id 'same' is registered twice; give one an explicit id",
    );
  });
});
