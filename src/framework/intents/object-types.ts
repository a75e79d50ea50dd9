// The type machinery that lets a context's first type argument be a whole object type or only its
// spec, and derives spec, status, old/new and field values from it.
import type { KubeObject } from '../objects/kube-object.js';

/**
 * What a handler's object type must have. Generated object types (`konductor types`) are interfaces
 * without an index signature, so they are not `KubeObject`s, but they are `TypedObject`s.
 */
export type TypedObject = Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>;

/** The keys a type declares by name, not through an index signature. */
type DeclaredKeys<T> = keyof {
  [
    K in keyof T as string extends K
      ? never
      : number extends K
        ? never
        : symbol extends K
          ? never
          : K
  ]: T[K];
};

/**
 * Whether `T` describes a whole object (it declares `apiVersion` and `kind`, as the interfaces
 * `konductor types` generates and `KubeObject` do) rather than only its `spec`.
 */
export type IsObjectType<T> =
  'apiVersion' extends DeclaredKeys<T> ? ('kind' extends DeclaredKeys<T> ? true : false) : false;

/** The `spec` type of a context's first type argument: the object's `spec`, or the argument itself when it is a spec. */
export type SpecOf<T> =
  IsObjectType<T> extends true
    ? 'spec' extends DeclaredKeys<T>
      ? NonNullable<T['spec' & keyof T]>
      : Record<string, unknown>
    : T;

/** The `status` type: the object's `status`, or `Status` when the first argument is a spec. */
export type StatusOf<T, Status = Record<string, unknown>> =
  IsObjectType<T> extends true
    ? 'status' extends DeclaredKeys<T>
      ? NonNullable<T['status' & keyof T]>
      : Record<string, unknown>
    : Status;

/** The object type: `T` itself, or a `KubeObject` with that spec and status. */
export type ObjectOf<T, Status = Record<string, unknown>> =
  IsObjectType<T> extends true
    ? T
    : KubeObject & {
        /** The object's spec. */
        spec?: T;
        /** The object's status. */
        status?: Status;
      };

/**
 * What an update handler without `field` sees as `old` and `new`: the object without `apiVersion`,
 * `kind`, `status` and metadata other than labels and annotations (see `essenceOf`).
 */
export type EssenceOf<T> = Omit<T, 'apiVersion' | 'kind' | 'status' | 'metadata'> & {
  /** Labels and annotations only. */
  metadata?: {
    /** The object's labels. */
    labels?: Record<string, string>;
    /** The object's annotations. */
    annotations?: Record<string, string>;
  };
};

/** The value at a dotted path (`spec.size`) of `T`; `unknown` when `T` does not declare it. */
export type FieldValue<T, Path extends string> = Path extends `${infer Head}.${infer Rest}`
  ? Head extends DeclaredKeys<NonNullable<T>>
    ? FieldValue<NonNullable<T>[Head & keyof NonNullable<T>], Rest>
    : unknown
  : Path extends DeclaredKeys<NonNullable<T>>
    ? NonNullable<T>[Path & keyof NonNullable<T>]
    : unknown;

/** `old`/`new` of a change handler on objects of type `T` with an optional `field` path. */
export type ChangeValue<T, Field extends string = never> = [Field] extends [never]
  ? IsObjectType<T> extends true
    ? EssenceOf<T>
    : unknown
  : IsObjectType<T> extends true
    ? FieldValue<T, Field>
    : unknown;
