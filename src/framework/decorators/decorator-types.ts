// The types of the decorator factories `on` holds: overloads for a kind or `apiVersion` and name,
// and the decorator each returns, so a method's parameter type is checked against the resource.
import type {
  ChangeContext,
  ChangeHandlerOptions,
  ChangeValue,
  EventContext,
  EventHandlerOptions,
  StatusOf,
  TypedObject,
} from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import type { Kind } from '../objects/kind.js';
import type { OwnedContext, OwnedOptions } from '../intents/owned-specs.js';
import type { AdmissionOptions } from '../intents/admission-specs.js';
import type { MutateDecorator, ValidateDecorator } from './admission.js';

/**
 * The decorator a change-handler factory returns. Without an object type (`on.create(...)`), the
 * context's types are inferred from the method's parameter. With one (`on.create<Widget>(...)`), the
 * method must accept `ChangeContext<Widget>`: `old`/`new` are the essence, or the `Field`'s value when
 * it is a known path (`on.field<Widget, 'spec.size'>`), or whatever the method declares when the
 * field is only known as a string.
 */
export type ChangeDecorator<
  T extends TypedObject = KubeObject,
  Field extends string = never,
> = KubeObject extends T
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
        method: (
          this: This,
          context: ChangeContext<T, StatusOf<T>, ChangeValue<T, Field>>,
        ) => unknown,
        context: ClassMethodDecoratorContext<This>,
      ) => void;

/** A change-handler factory: the resource as a kind (`on.create(Widget)`) or as `apiVersion` and `name`. */
export interface ChangeDecoratorFactory {
  <T extends TypedObject>(kind: Kind<T>, options?: ChangeHandlerOptions<T>): ChangeDecorator<T>;
  <T extends TypedObject = KubeObject>(
    apiVersion: string,
    name: string,
    options?: ChangeHandlerOptions<T>,
  ): ChangeDecorator<T>;
}

/** `on.update`: as {@link ChangeDecoratorFactory}, with an optional `field` that narrows `old`/`new`. */
export interface UpdateDecoratorFactory {
  <T extends TypedObject, Field extends string = never>(
    kind: Kind<T>,
    options?: ChangeHandlerOptions<T> & { field?: Field },
  ): ChangeDecorator<T, Field>;
  <T extends TypedObject = KubeObject, Field extends string = never>(
    apiVersion: string,
    name: string,
    options?: ChangeHandlerOptions<T> & { field?: Field },
  ): ChangeDecorator<T, Field>;
}

/** `on.field`: the resource, then the field path. */
export interface FieldDecoratorFactory {
  <T extends TypedObject, Field extends string = string>(
    kind: Kind<T>,
    field: Field,
    options?: Omit<ChangeHandlerOptions<T>, 'field'>,
  ): ChangeDecorator<T, Field>;
  <T extends TypedObject = KubeObject, Field extends string = string>(
    apiVersion: string,
    name: string,
    field: Field,
    options?: Omit<ChangeHandlerOptions<T>, 'field'>,
  ): ChangeDecorator<T, Field>;
}

/** `on.event`: the resource as a kind or as `apiVersion` and `name`. */
export interface EventDecoratorFactory {
  <T extends TypedObject>(kind: Kind<T>, options?: EventHandlerOptions<T>): EventDecorator<T>;
  <T extends TypedObject = KubeObject>(
    apiVersion: string,
    name: string,
    options?: EventHandlerOptions<T>,
  ): EventDecorator<T>;
}

/** The decorator `on.event` returns. */
export type EventDecorator<T extends TypedObject = KubeObject> = <This>(
  method: (this: This, context: EventContext<T>) => unknown,
  context: ClassMethodDecoratorContext<This>,
) => void;

/**
 * The decorator `on.owned` returns. Without an owner type, the context's types come from the method's
 * parameter (`OwnedContext<Widget, ConfigMap>`); with one (`on.owned<Widget>(...)`), the owner is fixed
 * and the child type comes from the parameter.
 */
export type OwnedDecorator<Owner extends TypedObject = KubeObject> = KubeObject extends Owner
  ? <This, O, Child extends TypedObject>(
      method: (this: This, context: OwnedContext<O, Child>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void
  : <This, Child extends TypedObject>(
      method: (this: This, context: OwnedContext<Owner, Child>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void;

/** `on.owned`: the owner as a kind or as `apiVersion` and `name`. */
export interface OwnedDecoratorFactory {
  <Owner extends TypedObject>(
    kind: Kind<Owner>,
    options: OwnedOptions<Owner>,
  ): OwnedDecorator<Owner>;
  <Owner extends TypedObject = KubeObject>(
    apiVersion: string,
    name: string,
    options: OwnedOptions<Owner>,
  ): OwnedDecorator<Owner>;
}

/** `on.validate` and `on.mutate`: the resource as a kind or as `apiVersion` and `name`. */
export interface AdmissionDecoratorFactory<K extends 'validate' | 'mutate'> {
  <T extends TypedObject>(
    kind: Kind<T>,
    options?: AdmissionOptions<T>,
  ): K extends 'validate' ? ValidateDecorator<T> : MutateDecorator<T>;
  <T extends TypedObject = KubeObject>(
    apiVersion: string,
    name: string,
    options?: AdmissionOptions<T>,
  ): K extends 'validate' ? ValidateDecorator<T> : MutateDecorator<T>;
}
