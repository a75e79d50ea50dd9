import {
  on,
  Registry,
  type ChangeContext,
  type EventContext,
} from '../../../src/framework/index.js';
import { type ChangeHandlerSpec } from '../../../src/framework/intents/handler-specs.js';

const API = 'example.com/v1';

describe('handler registration', () => {
  test('decorated methods become handlers whose ids are their method names (and method/field for field handlers), as in Kopf', () => {
    class Widgets {
      @on.create(API, 'widgets')
      async created(_: ChangeContext): Promise<void> {}

      @on.field(API, 'widgets', 'spec.size')
      async resized(_: ChangeContext): Promise<void> {}

      @on.event(API, 'widgets')
      seen(_: EventContext): void {}
    }
    const registry = new Registry().addClass(Widgets);
    expect(registry.handlers.map((h) => `${h.kind} ${h.id}`)).toEqual([
      'create created',
      'update resized/spec.size',
      'event seen',
    ]);
  });

  test('an instance built with options registers its decorated methods, bound to that instance', async () => {
    class Configured {
      constructor(readonly prefix: string) {}

      @on.create(API, 'widgets')
      async created({ patch }: ChangeContext): Promise<void> {
        patch.status.greeting = `${this.prefix}, widget`;
      }
    }
    const registry = new Registry().addInstance(new Configured('hello'));
    expect(registry.handlers.map((h) => `${h.kind} ${h.id}`)).toEqual(['create created']);
    const patch = { status: {} as Record<string, unknown> };
    await (registry.handlers[0] as ChangeHandlerSpec).fn({ patch } as unknown as ChangeContext);
    expect(patch.status.greeting).toBe('hello, widget');
  });

  test('an instance of a class without handler decorators is refused with its class name', () => {
    class Plain {}
    expect(() => new Registry().addInstance(new Plain())).toThrow(
      'Plain has no handler decorators',
    );
  });

  test('handlers are bound to one instance of their class, so they can share state through `this`', async () => {
    const instances: object[] = [];
    class Counter {
      count = 0;

      @on.create(API, 'widgets')
      async created(_: ChangeContext): Promise<void> {
        this.count += 1;
        instances.push(this);
      }

      @on.update(API, 'widgets')
      async updated(_: ChangeContext): Promise<void> {
        this.count += 10;
        instances.push(this);
      }
    }
    const [create, update] = new Registry().addClass(Counter).handlers as ChangeHandlerSpec[];
    await create!.fn({} as ChangeContext);
    await update!.fn({} as ChangeContext);

    expect(instances[0]).toBe(instances[1]);
    expect((instances[0] as Counter).count).toBe(11);
  });

  test('an explicit id replaces the default one', () => {
    class Widgets {
      @on.deletion(API, 'widgets', { id: 'cleanup', optional: true })
      async deleted(_: ChangeContext): Promise<void> {}
    }
    const [spec] = new Registry().addClass(Widgets).handlers;
    expect(spec).toMatchObject({ kind: 'delete', id: 'cleanup', options: { optional: true } });
  });

  test('a subclass inherits its parent handlers and adds its own without changing the parent', () => {
    class Base {
      @on.create(API, 'widgets')
      async created(_: ChangeContext): Promise<void> {}
    }
    class Extended extends Base {
      @on.resume(API, 'widgets')
      async resumed(_: ChangeContext): Promise<void> {}
    }
    expect(new Registry().addClass(Extended).handlers.map((h) => h.kind)).toEqual([
      'create',
      'resume',
    ]);
    expect(new Registry().addClass(Base).handlers.map((h) => h.kind)).toEqual(['create']);
  });

  test('plain functions can be registered without decorators (for JavaScript users)', () => {
    const registry = new Registry().change(
      'create',
      { apiVersion: API, name: 'widgets' },
      async ({ patch }) => {
        patch.status.phase = 'Ready';
      },
      { id: 'widgets-create', retries: 3 },
    );
    expect(registry.handlers[0]).toMatchObject({
      kind: 'create',
      id: 'widgets-create',
      options: { retries: 3 },
    });
  });

  test('decorators stacked on one method make one handler with several causes, under one id', () => {
    class Widgets {
      @on.create(API, 'widgets')
      @on.resume(API, 'widgets')
      @on.update(API, 'widgets')
      async ensure(_: ChangeContext): Promise<void> {}
    }

    const handlers = new Registry().addClass(Widgets).handlers;

    expect(handlers.map((h) => `${h.kind} ${h.id}`).sort()).toEqual([
      'create ensure',
      'resume ensure',
      'update ensure',
    ]);
    expect(new Set(handlers.map((h) => h.fn)).size).toBe(1);
  });

  test('a defaulted id remembers the Class.method id earlier releases stored progress under', () => {
    class Widgets {
      @on.create(API, 'widgets')
      async created(_: ChangeContext): Promise<void> {}

      @on.create(API, 'widgets', { id: 'explicit' })
      async named(_: ChangeContext): Promise<void> {}
    }

    expect(
      new Registry()
        .addClass(Widgets)
        .handlers.map((h) => (h.kind === 'create' ? h.legacyIds : undefined)),
    ).toEqual([['Widgets.created'], undefined]);
  });

  test('two handlers with the same id for one resource are rejected with a clear message', () => {
    const registry = new Registry().change(
      'create',
      { apiVersion: API, name: 'widgets' },
      async () => undefined,
      { id: 'same' },
    );
    expect(() =>
      registry.change('update', { apiVersion: API, name: 'widgets' }, async () => undefined, {
        id: 'same',
      }),
    ).toThrow(/handler id 'same' is registered twice for widgets/);
  });

  test('a class without handler decorators is rejected, naming the class', () => {
    class Plain {}
    expect(() => new Registry().addClass(Plain)).toThrow(/Plain has no handler decorators/);
  });

  test('on.deletion registers a delete handler, spelled so esbuild (tsx) can parse it', async () => {
    class Widgets {
      @on.deletion(API, 'widgets', { optional: true })
      async gone(_: ChangeContext): Promise<void> {}
    }
    expect(new Registry().addClass(Widgets).handlers[0]).toMatchObject({
      kind: 'delete',
      id: 'gone',
      options: { optional: true },
    });
    const { transformSync } = await import('esbuild');
    expect(() =>
      transformSync("class A { @on.deletion('v1', 'x') m() {} }", { loader: 'ts' }),
    ).not.toThrow();
  });
});
