/**
 * Free-form memory of one object, shared by all its handlers (change, `@on.event`, timers, daemons)
 * for the life of the process: `ctx.memo`. It starts as a shallow copy of the operator memo
 * (`createOperator({ memo })`), so values that are objects there are shared operator-wide, and it is
 * forgotten when the object is deleted. Nothing of it is stored on the object: a restarted operator
 * starts again from the operator memo (Kopf's `memo`).
 *
 * Type it by declaration merging:
 * @example
 * ```ts
 * declare module 'konductor' {
 *   interface Memo {
 *     lastName?: string;
 *   }
 * }
 *
 * @on.event('example.com/v1', 'widgets', { field: 'status.name', value: PRESENT })
 * touched({ memo, status }: EventContext<Widget>) {
 *   memo.lastName = status?.name; // typed: string | undefined
 * }
 * ```
 */
export interface Memo {
  [key: string]: unknown;
}

/**
 * The per-object memos of one operator, by object uid. An entry exists only for objects whose
 * handlers have read `ctx.memo` (contexts read it lazily), so objects that never touch it cost nothing.
 */
export class ObjectMemos {
  private readonly byUid = new Map<string, Memo>();

  /** @param operator the operator memo each object's memo is first copied from (shallowly). */
  constructor(readonly operator: Memo = {}) {}

  /** The object's memo, made on first use. */
  of(uid: string): Memo {
    let memo = this.byUid.get(uid);
    if (memo === undefined) {
      memo = { ...this.operator };
      this.byUid.set(uid, memo);
    }
    return memo;
  }

  /** Forgets the object's memo: it is gone. */
  forget(uid: string): void {
    this.byUid.delete(uid);
  }

  /** Objects with a memo. */
  get size(): number {
    return this.byUid.size;
  }
}

/**
 * Defines `memo` on a context as a getter that makes the object's memo on first read and keeps it, so
 * a context that is never asked for its memo makes none (and a handler that keeps its context keeps
 * the same memo, even after the object is gone).
 */
export function defineMemo<C extends object>(
  context: C,
  memos: ObjectMemos,
  uid: string,
): C & { memo: Memo } {
  let memo: Memo | undefined;
  return Object.defineProperty(context, 'memo', {
    enumerable: true,
    configurable: true,
    get: () => (memo ??= memos.of(uid)),
  }) as C & { memo: Memo };
}
