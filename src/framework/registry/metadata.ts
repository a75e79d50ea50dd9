// Node 20 has no Symbol.metadata. TypeScript and esbuild (tsx) only hand decorators a metadata
// object when it exists, and esbuild falls back to Symbol.for('Symbol.metadata'), so we define
// exactly that. This module must be evaluated before any decorated class: the public index imports it first.
const symbols = Symbol as unknown as { metadata?: symbol };
symbols.metadata ??= Symbol.for('Symbol.metadata');

/** The metadata symbol (standard `Symbol.metadata`). */
export const METADATA: symbol = symbols.metadata;

/** Key under which handler declarations are stored in a class's decorator metadata. */
export const HANDLERS = Symbol.for('konductor.handlers');
