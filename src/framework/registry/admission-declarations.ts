import { METADATA } from './metadata.js';
import type {
  AdmissionDeclaration,
  AdmissionHandlerFn,
  AdmissionSpec,
  ConversionDeclaration,
  ConversionFn,
  ConversionSpec,
} from '../intents/admission-specs.js';

/** Key under which `@on.validate`/`@on.mutate` declarations are stored in a class's decorator metadata. */
export const ADMISSIONS = Symbol.for('konductor.admissions');
/** Key under which `@on.convert` declarations are stored. */
export const CONVERSIONS = Symbol.for('konductor.conversions');

function declared<D>(cls: unknown, key: symbol): readonly D[] {
  if (typeof cls !== 'function') return [];
  const metadata = (
    cls as unknown as Record<symbol, Record<symbol, D[] | undefined> | null | undefined>
  )[METADATA];
  return metadata?.[key] ?? [];
}

/** The admission declarations of a decorated class (its parents' included). */
export function admissionDeclarationsOf(cls: unknown): readonly AdmissionDeclaration[] {
  return declared<AdmissionDeclaration>(cls, ADMISSIONS);
}

/** The conversion declarations of a decorated class (its parents' included). */
export function conversionDeclarationsOf(cls: unknown): readonly ConversionDeclaration[] {
  return declared<ConversionDeclaration>(cls, CONVERSIONS);
}

function boundMethod<F>(instance: object, method: string | symbol): F {
  const cls = instance.constructor;
  const fn = (instance as Record<string | symbol, unknown>)[method];
  if (typeof fn !== 'function') throw new Error(`${cls.name}.${String(method)} is not a method`);
  return (fn as (...args: unknown[]) => unknown).bind(instance) as F;
}

/** The admission handlers of an instance of a decorated class, bound to it; ids default to `Class.method`. */
export function admissionSpecsOf(instance: object): AdmissionSpec[] {
  const cls = instance.constructor;
  return admissionDeclarationsOf(cls).map(({ kind, resource, options, method }) => ({
    kind,
    id: options.id ?? `${cls.name}.${String(method)}`,
    resource,
    options,
    fn: boundMethod<AdmissionHandlerFn>(instance, method),
  }));
}

/** The conversion handlers of an instance of a decorated class, bound to it. */
export function conversionSpecsOf(instance: object): ConversionSpec[] {
  const cls = instance.constructor;
  return conversionDeclarationsOf(cls).map(({ group, name, method }) => ({
    id: `${cls.name}.${String(method)}`,
    group,
    name,
    fn: boundMethod<ConversionFn>(instance, method),
  }));
}

/** Checks that an admission handler's id is free: it names the webhook's URL path, so it is unique per kind. */
export function checkAdmissionId(existing: readonly AdmissionSpec[], spec: AdmissionSpec): void {
  if (existing.some((other) => other.kind === spec.kind && other.id === spec.id)) {
    throw new Error(
      `${spec.kind} handler id '${spec.id}' is registered twice (it names the webhook path); give one an explicit id`,
    );
  }
}

/** Checks that a CRD has one conversion handler: the API server calls one webhook per CRD. */
export function checkConversion(existing: readonly ConversionSpec[], spec: ConversionSpec): void {
  const clash = existing.find(
    (other) => other.group === spec.group && other.name.toLowerCase() === spec.name.toLowerCase(),
  );
  if (clash)
    throw new Error(
      `${spec.name}.${spec.group} has two conversion handlers (${clash.id} and ${spec.id}); a CRD has one conversion webhook`,
    );
}
