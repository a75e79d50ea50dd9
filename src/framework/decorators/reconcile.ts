import '../registry/metadata.js';
import type { TypedObject } from '../intents/handler-specs.js';
import type {
  ReconcileContext,
  ReconcileOptions,
  ReconcileResult,
} from '../intents/reconcile-specs.js';
import { resourceArguments, type Kind } from '../objects/kind.js';
import type { KubeObject } from '../objects/kube-object.js';
import { declareHandler } from './declare-handler.js';

/** What `on.reconcile` returns: with a kind, the method's context is typed from it; otherwise from the method's parameter. */
export type ReconcileDecorator<T extends TypedObject = KubeObject> = KubeObject extends T
  ? <This, O>(
      method: (
        this: This,
        context: ReconcileContext<O>,
      ) => ReconcileResult | Promise<ReconcileResult>,
      context: ClassMethodDecoratorContext<This>,
    ) => void
  : <This>(
      method: (
        this: This,
        context: ReconcileContext<T>,
      ) => ReconcileResult | Promise<ReconcileResult>,
      context: ClassMethodDecoratorContext<This>,
    ) => void;

/** `on.reconcile`: the resource as a kind, or as `apiVersion` and `name`. */
export interface ReconcileDecoratorFactory {
  <T extends TypedObject>(kind: Kind<T>, options?: ReconcileOptions<T>): ReconcileDecorator<T>;
  <T extends TypedObject = KubeObject>(
    apiVersion: string,
    name: string,
    options?: ReconcileOptions<T>,
  ): ReconcileDecorator<T>;
}

export const reconcile: ReconcileDecoratorFactory = ((first: unknown, ...rest: unknown[]) => {
  const {
    resource,
    rest: [options],
  } = resourceArguments(first, rest, '@on.reconcile');
  const decorator = (_method: unknown, context: ClassMethodDecoratorContext): void =>
    declareHandler(context, {
      kind: 'reconcile',
      resource,
      options: (options ?? {}) as ReconcileOptions,
    });
  return decorator;
}) as ReconcileDecoratorFactory;
