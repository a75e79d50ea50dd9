/** The longest `TemporaryError` delay honoured: 10 years. */
export const MAX_TEMPORARY_DELAY_SECONDS = 10 * 365 * 86_400;

/**
 * Thrown by a handler to retry later: after `delay` seconds (default 60), or at once with `delay: 0`.
 * The attempt counts against `retries` and `timeout`.
 */
export class TemporaryError extends Error {
  /** `'TemporaryError'`, or a subclass's name. */
  override readonly name: string = 'TemporaryError';
  /** Seconds until the next attempt. */
  readonly delay: number;

  constructor(message: string, options: { delay?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    // NaN (e.g. from `Number(env.X)`) would make an invalid retry time; treat it as not given.
    const delay = options.delay === undefined || Number.isNaN(options.delay) ? 60 : options.delay;
    // Capped so `Infinity` or a typo cannot make an invalid retry time (new Date() would throw).
    this.delay = Math.min(MAX_TEMPORARY_DELAY_SECONDS, Math.max(0, delay));
  }
}

/** Thrown by a handler to give up on this change: it runs again only when the object changes again. */
export class PermanentError extends Error {
  /** `'PermanentError'`, or a subclass's name. */
  override readonly name: string = 'PermanentError';
}

/** The handler used up its `retries`. */
export class HandlerRetriesError extends PermanentError {
  /** Always `'HandlerRetriesError'`. */
  override readonly name = 'HandlerRetriesError';
}

/** The handler ran past its `timeout` (counted from its first attempt). */
export class HandlerTimeoutError extends PermanentError {
  /** Always `'HandlerTimeoutError'`. */
  override readonly name = 'HandlerTimeoutError';
}

/** A readable one-line description of anything thrown. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (error === undefined) return 'undefined was thrown';
  if (typeof error === 'string') return error;
  try {
    // JSON.stringify returns undefined (not a string) for symbols and functions.
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/**
 * What a handler threw that is not an `Error` (`throw undefined`, `Promise.reject()`, a string): still
 * a failure, never a success. Kept as `thrown` for logs.
 */
export class NonErrorThrown extends Error {
  override readonly name = 'NonErrorThrown';

  constructor(readonly thrown: unknown) {
    super(`the handler threw a non-Error value: ${describeError(thrown)}`);
  }
}

/** Anything caught from a handler as an `Error`, so "no error" can never be mistaken for success. */
export function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new NonErrorThrown(thrown);
}

// Admission webhooks: a validating or mutating handler refuses the request.
/**
 * Thrown by an `@on.validate` or `@on.mutate` handler to refuse the request: the API server answers
 * the client (`kubectl apply`) with `message` and `code` (default 400; a code outside 400..599 is
 * taken as 400). Any other error also refuses, as a 500 with its message.
 * @example throw new AdmissionError('spec.size must be at most 9', { code: 422 });
 */
export class AdmissionError extends Error {
  /** Always `'AdmissionError'`. */
  override readonly name = 'AdmissionError';
  /** The HTTP status code the client sees. */
  readonly code: number;

  constructor(message: string, options: { code?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    const code = options.code ?? 400;
    this.code = Number.isInteger(code) && code >= 400 && code <= 599 ? code : 400;
  }
}
