/**
 * A JSON merge patch (RFC 7386) of a `T`: every field optional, `null` deletes it, objects merge
 * field by field, arrays and scalars replace.
 */
export type MergePatch<T> = { [K in keyof T]?: MergePatchValue<T[K]> };

/** One field of a {@link MergePatch}: `null`, a whole array or scalar, or a patch of an object. */
export type MergePatchValue<V> =
  null | (V extends readonly unknown[] ? V : V extends object ? MergePatch<V> : V);

/** A `T` with every field optional at every depth (arrays stay whole): what a server-side apply sends. */
export type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends readonly unknown[]
    ? T[K]
    : T[K] extends object | undefined
      ? DeepPartial<T[K]>
      : T[K];
};
