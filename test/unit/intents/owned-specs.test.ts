import { on } from '../../../src/framework/decorators/on.js';
import type { OwnedContext, OwnedSpec } from '../../../src/framework/intents/owned-specs.js';
import { Registry } from '../../../src/framework/registry/registry.js';
import { planWatch } from '../../../src/framework/runtime/watch-plan.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';
import type { Widget } from '../../support/widget-objects.js';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

class Owners {
  @on.owned('test.konductor.dev/v1', 'widgets', {
    child: ['v1', 'configmaps'],
    labelSelector: 'app=db',
    labels: { tier: 'gold' },
  })
  configChanged(_context: OwnedContext<Widget, ConfigMap>): void {}
}

describe('@on.owned registration', () => {
  const [spec] = new Registry().addClass(Owners).handlers as OwnedSpec[];

  test('registers an owned handler of the owner resource, with its child resource and the child’s selector', () => {
    expect(spec).toMatchObject({
      kind: 'owned',
      id: 'configChanged',
      resource: { apiVersion: 'test.konductor.dev/v1', name: 'widgets' },
      child: { resource: { apiVersion: 'v1', name: 'configmaps' }, labelSelector: 'app=db' },
      options: { labels: { tier: 'gold' } },
    });
  });

  test('the child’s label selector never narrows the owner’s watch', () => {
    expect(planWatch([spec!], 'team-a').scope).toEqual({
      namespace: 'team-a',
      labelSelector: undefined,
      fieldSelector: undefined,
    });
  });

  test('a registration without a child resource is refused, saying what to give', () => {
    class Broken {
      @on.owned('test.konductor.dev/v1', 'widgets', {} as never)
      changed(): void {}
    }
    expect(() => new Registry().addClass(Broken)).toThrow(
      /options.child must be a kind or \[apiVersion, name\]/,
    );
  });
});
