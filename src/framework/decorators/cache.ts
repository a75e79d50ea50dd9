import '../registry/metadata.js';
import { CACHES, declareIn, INDEXES, type IndexDeclaration } from '../registry/cache-declarations.js';
import type { CacheOptions, CacheSpec, IndexContext, IndexOptions } from '../handler/cache.js';
import type { TypedObject } from '../handler/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';

/** A TC39 class decorator, for any class. */
export type CacheClassDecorator = <C extends abstract new (...args: never[]) => unknown>(value: C, context: ClassDecoratorContext<C>) => void;

/** A TC39 method decorator for index functions on objects of type `T`. */
export type IndexDecorator<T extends TypedObject = KubeObject> = <This, V>(
  method: (this: This, context: IndexContext<T>) => Record<string, V> | undefined,
  context: ClassMethodDecoratorContext<This>,
) => void;

/** `@on.cache`: see `on.cache`. */
export function cacheDecorator(apiVersion: string, name: string, options: CacheOptions = {}): CacheClassDecorator {
  return (_value, context) => {
    const spec: CacheSpec = { resource: { apiVersion, name }, options: { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector } };
    declareIn(context.metadata, CACHES, spec);
  };
}

/** `@on.index`: see `on.index`. */
export function indexDecorator<T extends TypedObject = KubeObject>(apiVersion: string, name: string, options: IndexOptions<T> = {}): IndexDecorator<T> {
  return (_method, context) => {
    if (context.static || context.private) throw new Error(`@on.index on ${String(context.name)}: index functions must be public instance methods`);
    const declaration: IndexDeclaration = { resource: { apiVersion, name }, options: options as IndexOptions, method: context.name };
    declareIn(context.metadata, INDEXES, declaration);
  };
}
