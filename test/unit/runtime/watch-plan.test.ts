import type {
  EventHandlerSpec,
  HandlerOptions,
  HandlerSpec,
} from '../../../src/framework/intents/handler-specs.js';
import { planWatch } from '../../../src/framework/runtime/watch-plan.js';
import { filterContext } from '../../../src/framework/intents/filter-context.js';
import type { KubeObject } from '../../../src/framework/objects/kube-object.js';

function handler(id: string, options: HandlerOptions = {}): EventHandlerSpec {
  return {
    kind: 'event',
    id,
    resource: { apiVersion: 'example.com/v1', name: 'widgets' },
    options,
    fn: () => undefined,
  };
}

function labelled(labels: Record<string, string>): KubeObject {
  return { metadata: { name: 'w', namespace: 'ns', labels } };
}

function passes(spec: HandlerSpec, object: KubeObject): boolean {
  return spec.options.when ? spec.options.when(filterContext(object, undefined)) : true;
}

describe('planning the one watch of a resource', () => {
  test('selectors every handler shares go to the server, and handlers are left as they are', () => {
    const specs = [
      handler('a', { labelSelector: 'app=db', fieldSelector: 'metadata.name=main' }),
      handler('b', { labelSelector: 'app=db', fieldSelector: 'metadata.name=main' }),
    ];
    const plan = planWatch(specs, 'ns');
    expect(plan.scope).toEqual({
      namespace: 'ns',
      labelSelector: 'app=db',
      fieldSelector: 'metadata.name=main',
    });
    expect(plan.handlers).toEqual(specs);
  });

  test('handlers without selectors watch everything in the namespace', () => {
    const plan = planWatch([handler('a'), handler('b')], undefined);
    expect(plan.scope).toEqual({
      namespace: undefined,
      labelSelector: undefined,
      fieldSelector: undefined,
    });
  });

  test('different selectors: the server gets none, and each handler applies its own', () => {
    const plan = planWatch(
      [
        handler('red', { labelSelector: 'color=red' }),
        handler('blue', { labelSelector: 'color in (blue)' }),
        handler('all'),
      ],
      'ns',
    );
    expect(plan.scope).toEqual({ namespace: 'ns' });
    const [red, blue, all] = plan.handlers as [HandlerSpec, HandlerSpec, HandlerSpec];
    expect([
      passes(red, labelled({ color: 'red' })),
      passes(red, labelled({ color: 'blue' })),
    ]).toEqual([true, false]);
    expect([
      passes(blue, labelled({ color: 'red' })),
      passes(blue, labelled({ color: 'blue' })),
    ]).toEqual([false, true]);
    expect([passes(all, labelled({ color: 'red' })), passes(all, labelled({}))]).toEqual([
      true,
      true,
    ]);
  });

  test('a handler applying its selector itself still honours its own when filter', () => {
    const plan = planWatch(
      [
        handler('big', {
          fieldSelector: 'metadata.name=w',
          when: (o) => o.metadata?.labels?.size === 'big',
        }),
        handler('other'),
      ],
      'ns',
    );
    const big = plan.handlers[0]!;
    expect(passes(big, labelled({ size: 'big' }))).toBe(true);
    expect(passes(big, labelled({ size: 'small' }))).toBe(false);
    expect(passes(big, { metadata: { name: 'x', labels: { size: 'big' } } })).toBe(false);
  });

  test('an unreadable selector names the handler', () => {
    expect(() =>
      planWatch([handler('Widgets.broken', { labelSelector: 'size>3' }), handler('other')], 'ns'),
    ).toThrow(/handler Widgets\.broken: invalid label selector 'size>3'/);
  });

  test('two change handlers with one id are an error, even when they name the resource differently', () => {
    const created = { ...handler('Widgets.created'), kind: 'create' } as unknown as HandlerSpec;
    const byKind = {
      ...created,
      resource: { apiVersion: 'example.com/v1', name: 'Widget' },
    } as HandlerSpec;
    expect(() => planWatch([created, byKind], 'ns')).toThrow(
      /handler id 'Widgets.created' is registered twice for this resource \(as 'widgets' and 'Widget'\); give one an explicit id/,
    );
  });

  test('event handlers may share an id: they keep no progress on the object', () => {
    const byKind: HandlerSpec = {
      ...handler('Widgets.seen'),
      resource: { apiVersion: 'example.com/v1', name: 'Widget' },
    };
    expect(planWatch([handler('Widgets.seen'), byKind], 'ns').handlers).toHaveLength(2);
  });
});
