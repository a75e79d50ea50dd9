import '../registry/metadata.js';
import { ADMISSIONS, CONVERSIONS } from '../registry/admission-declarations.js';
import {
  checkAdmissionOptions,
  type AdmissionContext,
  type AdmissionDeclaration,
  type AdmissionOptions,
  type AdmissionSpec,
  type ConversionContext,
  type ConversionDeclaration,
  type MutationContext,
} from '../intents/admission-specs.js';
import type { StatusOf, TypedObject } from '../intents/handler-specs.js';
import type { KubeObject } from '../objects/kube-object.js';

type DecoratorContext = Pick<
  ClassMethodDecoratorContext,
  'static' | 'private' | 'name' | 'metadata'
>;

/**
 * The decorator `on.validate` returns. Without an object type the context's types come from the
 * method's parameter (`AdmissionContext<Widget>`); with one (`on.validate<Widget>(...)`) they are fixed.
 */
export type ValidateDecorator<T extends TypedObject = KubeObject> = KubeObject extends T
  ? <This, Spec, Status>(
      method: (this: This, context: AdmissionContext<Spec, Status>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void
  : <This>(
      method: (this: This, context: AdmissionContext<T, StatusOf<T>>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void;

/** The decorator `on.mutate` returns; as {@link ValidateDecorator}, with a {@link MutationContext}. */
export type MutateDecorator<T extends TypedObject = KubeObject> = KubeObject extends T
  ? <This, Spec, Status>(
      method: (this: This, context: MutationContext<Spec, Status>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void
  : <This>(
      method: (this: This, context: MutationContext<T, StatusOf<T>>) => unknown,
      context: ClassMethodDecoratorContext<This>,
    ) => void;

/** The decorator `on.convert` returns. */
export type ConvertDecorator = <This>(
  method: (this: This, context: ConversionContext) => KubeObject | Promise<KubeObject>,
  context: ClassMethodDecoratorContext<This>,
) => void;

/** Appends a declaration to the class's own list under `key` (a subclass adds to, not mutates, its parent's). */
function declare<D>(
  key: symbol,
  decorator: string,
  context: DecoratorContext,
  declaration: D,
): void {
  if (context.static || context.private)
    throw new Error(
      `@on.${decorator} on ${String(context.name)}: handlers must be public instance methods`,
    );
  const metadata = context.metadata as Record<symbol, D[] | undefined> | undefined;
  if (!metadata)
    throw new Error(
      'decorator metadata is unavailable: import "konductor" before defining handler classes',
    );
  const own = Object.prototype.hasOwnProperty.call(metadata, key)
    ? metadata[key]!
    : [...(metadata[key] ?? [])];
  own.push(declaration);
  metadata[key] = own;
}

/** Records a validating or mutating handler; its options are checked now, so a typo fails at load. */
export function admission(
  kind: AdmissionSpec['kind'],
  apiVersion: string,
  name: string,
  options: AdmissionOptions,
): (method: unknown, context: DecoratorContext) => void {
  checkAdmissionOptions(kind, options);
  return (_method, context) =>
    declare<AdmissionDeclaration>(ADMISSIONS, kind, context, {
      kind,
      resource: { apiVersion, name },
      options,
      method: context.name,
    });
}

/** Records a conversion handler for the CRD `name` (plural) of `group`. */
export function conversion(group: string, name: string): ConvertDecorator {
  if (!group || group.includes('/'))
    throw new Error(
      `@on.convert: expected an API group such as 'example.com' (no version), got ${JSON.stringify(group)}`,
    );
  if (!name) throw new Error(`@on.convert: expected the CRD's plural, got ${JSON.stringify(name)}`);
  return (_method, context) =>
    declare<ConversionDeclaration>(CONVERSIONS, 'convert', context, {
      group,
      name,
      method: context.name,
    });
}
