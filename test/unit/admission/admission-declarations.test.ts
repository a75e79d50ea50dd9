import {
  AdmissionError,
  on,
  Registry,
  type AdmissionContext,
  type ConversionContext,
  type KubeObject,
  type MutationContext,
} from '../../../src/framework/index.js';

interface Widget {
  apiVersion: 'example.com/v1';
  kind: 'Widget';
  metadata?: KubeObject['metadata'];
  spec?: { size: number };
}

describe('@on.validate, @on.mutate and @on.convert in the registry', () => {
  test('each admission handler is registered with its kind, resource, options and a Class.method id', () => {
    class Widgets {
      @on.validate('example.com/v1', 'widgets', { operations: ['CREATE'], failurePolicy: 'Ignore' })
      check({ spec }: AdmissionContext<Widget>) {
        if (spec.size > 9) throw new AdmissionError('too big');
      }
      @on.mutate<Widget>('example.com/v1', 'widgets', { id: 'defaults' })
      defaults({ patch }: MutationContext<Widget>) {
        patch.spec.size = 1;
      }
    }
    const registry = new Registry().addClass(Widgets);
    expect(
      registry
        .admission()
        .map(({ kind, id, resource, options }) => ({ kind, id, resource, options })),
    ).toEqual([
      {
        kind: 'validate',
        id: 'Widgets.check',
        resource: { apiVersion: 'example.com/v1', name: 'widgets' },
        options: { operations: ['CREATE'], failurePolicy: 'Ignore' },
      },
      {
        kind: 'mutate',
        id: 'defaults',
        resource: { apiVersion: 'example.com/v1', name: 'widgets' },
        options: { id: 'defaults' },
      },
    ]);
  });

  test('admission and conversion handlers are not watch handlers: nothing is watched for them', () => {
    class Widgets {
      @on.validate('example.com/v1', 'widgets')
      check() {}
      @on.convert('example.com', 'widgets')
      convert({ object }: ConversionContext) {
        return object;
      }
    }
    const registry = new Registry().addClass(Widgets);
    expect(registry.handlers).toEqual([]);
    expect(registry.caches).toEqual([]);
    expect(registry.conversions().map(({ id, group, name }) => ({ id, group, name }))).toEqual([
      { id: 'Widgets.convert', group: 'example.com', name: 'widgets' },
    ]);
  });

  test('handlers are bound to their instance', async () => {
    class Widgets {
      limit = 3;
      @on.validate('example.com/v1', 'widgets')
      check({ spec }: AdmissionContext<Widget>) {
        return spec.size > this.limit ? ['large'] : [];
      }
    }
    const registry = new Registry().addInstance(new Widgets());
    expect(
      await registry.admission()[0]!.fn({ spec: { size: 5 } } as unknown as MutationContext),
    ).toEqual(['large']);
  });

  test.each([
    [{ timeoutSeconds: 0 }, 'timeoutSeconds: expected a whole number of seconds from 1 to 30'],
    [{ timeoutSeconds: 31 }, 'timeoutSeconds: expected a whole number of seconds from 1 to 30'],
    [{ timeoutSeconds: 2.5 }, 'timeoutSeconds'],
    [{ operations: ['CREATE', 'PATCH'] }, `operations: unknown "PATCH"`],
    [{ operations: [] }, 'operations: expected a non-empty list'],
    [{ failurePolicy: 'Retry' }, `failurePolicy: expected 'Fail' or 'Ignore'`],
    [{ subresource: '../status' }, 'subresource'],
  ])('options %j are refused when declared, naming the option', (options, message) => {
    expect(() => on.validate('example.com/v1', 'widgets', options as never)).toThrow(message);
  });

  test('two admission handlers of one kind with one id are refused: the id names the webhook path', () => {
    class A {
      @on.validate('example.com/v1', 'widgets', { id: 'same' })
      one() {}
    }
    class B {
      @on.validate('example.com/v1', 'gadgets', { id: 'same' })
      two() {}
    }
    expect(() => new Registry().addClass(A).addClass(B)).toThrow(
      `validate handler id 'same' is registered twice`,
    );
  });

  test('a CRD has one conversion handler', () => {
    class A {
      @on.convert('example.com', 'widgets')
      one({ object }: ConversionContext) {
        return object;
      }
      @on.convert('example.com', 'widgets')
      two({ object }: ConversionContext) {
        return object;
      }
    }
    expect(() => new Registry().addClass(A)).toThrow(
      'widgets.example.com has two conversion handlers (A.one and A.two)',
    );
  });

  test('@on.convert takes an API group, not an apiVersion', () => {
    expect(() => on.convert('example.com/v1', 'widgets')).toThrow(
      `expected an API group such as 'example.com'`,
    );
  });

  test('AdmissionError carries its code, 400 by default and for codes that are not HTTP errors', () => {
    expect(new AdmissionError('no').code).toBe(400);
    expect(new AdmissionError('no', { code: 422 }).code).toBe(422);
    expect(new AdmissionError('no', { code: 200 }).code).toBe(400);
  });
});
