import '../registry/metadata.js';
import {
  CACHES,
  declareIn,
  INDEXES,
  type IndexDeclaration,
} from '../registry/cache-declarations.js';
import type {
  CacheOptions,
  CacheSpec,
  IndexContext,
  IndexOptions,
} from '../intents/cache-contract.js';
import type { TypedObject } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';
import { resourceArguments, type Kind } from '../objects/kind.js';

/** A TC39 class decorator, for any class. */
export type CacheClassDecorator = <C extends abstract new (...args: never[]) => unknown>(
  value: C,
  context: ClassDecoratorContext<C>,
) => void;

/** A TC39 method decorator for index functions on objects of type `T`. */
export type IndexDecorator<T extends TypedObject = KubeObject> = <This, V>(
  method: (this: This, context: IndexContext<T>) => Record<string, V> | undefined,
  context: ClassMethodDecoratorContext<This>,
) => void;

/** `@on.cache`: see `on.cache`. */
/** `@on.cache`: the resource as a kind or as `apiVersion` and `name`. */
export interface CacheDecoratorFactory {
  (kind: Kind<unknown>, options?: CacheOptions): CacheClassDecorator;
  (apiVersion: string, name: string, options?: CacheOptions): CacheClassDecorator;
}

export const cacheDecorator: CacheDecoratorFactory = ((
  first: unknown,
  ...rest: unknown[]
): CacheClassDecorator => {
  const {
    resource,
    rest: [given],
  } = resourceArguments(first, rest, '@on.cache');
  const options = (given ?? {}) as CacheOptions;
  return (_value, context) => {
    const spec: CacheSpec = {
      resource,
      options: { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector },
    };
    declareIn(context.metadata, CACHES, spec);
  };
}) as CacheDecoratorFactory;

/** `@on.index`: the resource as a kind or as `apiVersion` and `name`. */
export interface IndexDecoratorFactory {
  <T extends TypedObject>(kind: Kind<T>, options?: IndexOptions<T>): IndexDecorator<T>;
  <T extends TypedObject = KubeObject>(
    apiVersion: string,
    name: string,
    options?: IndexOptions<T>,
  ): IndexDecorator<T>;
}

export const indexDecorator: IndexDecoratorFactory = ((first: unknown, ...rest: unknown[]) => {
  const {
    resource,
    rest: [given],
  } = resourceArguments(first, rest, '@on.index');
  const options = (given ?? {}) as IndexOptions;
  return (_method: unknown, context: ClassMethodDecoratorContext) => {
    if (context.static || context.private)
      throw new Error(
        `@on.index on ${String(context.name)}: index functions must be public instance methods`,
      );
    const declaration: IndexDeclaration = { resource, options, method: context.name };
    declareIn(context.metadata, INDEXES, declaration);
  };
}) as IndexDecoratorFactory;
