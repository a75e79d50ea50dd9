import '../registry/metadata.js';
import { HANDLERS } from '../registry/metadata.js';
import type {
  ChangeContext,
  ChangeHandlerOptions,
  ChangeValue,
  EventContext,
  EventHandlerOptions,
  HandlerDeclaration,
  HandlerOptions,
  StatusOf,
  TypedObject,
} from '../handler/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';

type DecoratorContext = Pick<ClassMethodDecoratorContext, 'static' | 'private' | 'name' | 'metadata'>;

/** Records a handler declaration in the class's decorator metadata. */
export function declareHandler(context: DecoratorContext, declaration: Omit<HandlerDeclaration, 'method'>): void {
  if (context.static || context.private) {
    throw new Error(`@on.${declaration.kind} on ${String(context.name)}: handlers must be public instance methods`);
  }
  const metadata = context.metadata as Record<symbol, HandlerDeclaration[] | undefined> | undefined;
  if (!metadata) throw new Error('decorator metadata is unavailable: import "konductor" before defining handler classes');
  // Own array per class, so a subclass adds to (not mutates) its parent's list.
  const own = Object.prototype.hasOwnProperty.call(metadata, HANDLERS) ? metadata[HANDLERS]! : [...(metadata[HANDLERS] ?? [])];
  own.push({ ...declaration, method: context.name });
  metadata[HANDLERS] = own;
}

/**
 * The decorator a change-handler factory returns. Without an object type (`on.create(...)`), the
 * context's types are inferred from the method's parameter. With one (`on.create<Widget>(...)`), the
 * method must accept `ChangeContext<Widget>`: `old`/`new` are the essence, or the `Field`'s value when
 * it is a known path (`on.field<Widget, 'spec.size'>`), or whatever the method declares when the
 * field is only known as a string.
 */
export type ChangeDecorator<T extends TypedObject = KubeObject, Field extends string = never> = KubeObject extends T
  ? <This, Spec, Status, Change>(
      method: (this: This, context: ChangeContext<Spec, Status, Change>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void
  : string extends Field
    ? <This, Change>(
        method: (this: This, context: ChangeContext<T, StatusOf<T>, Change>) => unknown,
        context: ClassMethodDecoratorContext<This>,
      ) => void
    : <This>(
        method: (this: This, context: ChangeContext<T, StatusOf<T>, ChangeValue<T, Field>>) => unknown,
        context: ClassMethodDecoratorContext<This>,
      ) => void;

function change<T extends TypedObject, Field extends string>(
  kind: HandlerDeclaration['kind'],
  apiVersion: string,
  name: string,
  options: ChangeHandlerOptions,
): ChangeDecorator<T, Field> {
  const decorator = (_method: unknown, context: ClassMethodDecoratorContext): void =>
    declareHandler(context, { kind, resource: { apiVersion, name }, options });
  // One decorator at run time; the conditional type only decides which methods it accepts.
  return decorator as unknown as ChangeDecorator<T, Field>;
}

/**
 * Decorators that register class methods as handlers. Resources are named by `group/version`
 * (`v1` for core) plus plural, kind, singular or short name.
 *
 * @example
 * ```ts
 * import { on, PermanentError, type ChangeContext } from 'konductor';
 * class Widgets {
 *   @on.create('example.com/v1', 'widgets')
 *   async created({ patch }: ChangeContext) { patch.status.phase = 'Ready'; }
 *
 *   @on.field('example.com/v1', 'widgets', 'spec.size')
 *   async resized({ new: size }: ChangeContext) { if (Number(size) > 9) throw new PermanentError('size must be <= 9'); }
 * }
 * ```
 */
export const on = {
  /**
   * Runs for every raw watch event (ADDED, MODIFIED, DELETED) of the resource, in order, one at a
   * time per object. Errors are logged and ignored: no retries, no progress record. `field` (with
   * `value`, default `PRESENT`) runs it only for events whose object has a matching value there.
   */
  event<T extends TypedObject = KubeObject>(apiVersion: string, name: string, options: EventHandlerOptions<T> = {}) {
    return function <This>(_method: (this: This, context: EventContext<T>) => unknown, context: ClassMethodDecoratorContext<This>): void {
      declareHandler(context, { kind: 'event', resource: { apiVersion, name }, options: options as HandlerOptions });
    };
  },

  /** Runs once when an object is first seen with no record of having been handled. */
  create<T extends TypedObject = KubeObject>(apiVersion: string, name: string, options: ChangeHandlerOptions<T> = {}): ChangeDecorator<T> {
    return change('create', apiVersion, name, options as ChangeHandlerOptions);
  },

  /** Runs when the object's essence (spec, labels, annotations; or one `field`) changed since it was last handled. */
  update<T extends TypedObject = KubeObject, Field extends string = never>(
    apiVersion: string,
    name: string,
    options: ChangeHandlerOptions<T> & { field?: Field } = {},
  ): ChangeDecorator<T, Field> {
    return change('update', apiVersion, name, options as ChangeHandlerOptions);
  },

  /** Runs when one field (`spec.size`, or `status.phase`) changed; `old`/`new`/`diff` are narrowed to it. */
  field<T extends TypedObject = KubeObject, Field extends string = string>(
    apiVersion: string,
    name: string,
    field: Field,
    options: Omit<ChangeHandlerOptions<T>, 'field'> = {},
  ): ChangeDecorator<T, Field> {
    return change('update', apiVersion, name, { ...(options as ChangeHandlerOptions), field });
  },

  /**
   * Runs when the object is being deleted. Unless `optional`, a finalizer holds the object until every
   * delete handler has finished. The portable name: it parses in every toolchain (tsc, esbuild/tsx,
   * Babel, SWC), unlike `on.delete`.
   */
  deletion<T extends TypedObject = KubeObject>(apiVersion: string, name: string, options: ChangeHandlerOptions<T> = {}): ChangeDecorator<T> {
    return change('delete', apiVersion, name, options as ChangeHandlerOptions);
  },

  /**
   * Kopf's name for {@link on.deletion}, the same decorator. esbuild (and so tsx and
   * `konductor run`) rejects a reserved word after the dot in a decorator (`@on.delete(...)`), while
   * `tsc` accepts it: prefer `on.deletion`.
   */
  delete<T extends TypedObject = KubeObject>(apiVersion: string, name: string, options: ChangeHandlerOptions<T> = {}): ChangeDecorator<T> {
    return change('delete', apiVersion, name, options as ChangeHandlerOptions);
  },

  /** Runs for objects that exist when the operator starts (and alongside updates to them on first sight). */
  resume<T extends TypedObject = KubeObject>(apiVersion: string, name: string, options: ChangeHandlerOptions<T> = {}): ChangeDecorator<T> {
    return change('resume', apiVersion, name, options as ChangeHandlerOptions);
  },
};
