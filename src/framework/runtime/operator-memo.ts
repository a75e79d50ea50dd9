/** The memo of each operator's options, so every part of one operator shares the same object. */
const memos = new WeakMap<object, Record<string, unknown>>();

/**
 * The operator memo: `options.memo` itself when given, else one empty object per options object.
 * Startup handlers fill it and every other handler of the operator reads it (Kopf's operator memo),
 * so all of them must get it from here.
 */
export function operatorMemo(options: { memo?: Record<string, unknown> }): Record<string, unknown> {
  if (options.memo) return options.memo;
  let memo = memos.get(options);
  if (!memo) {
    memo = {};
    memos.set(options, memo);
  }
  return memo;
}
