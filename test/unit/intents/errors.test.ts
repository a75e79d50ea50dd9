import {
  describeError,
  HandlerRetriesError,
  HandlerTimeoutError,
  PermanentError,
  TemporaryError,
} from '../../../src/framework/intents/errors.js';

describe('TemporaryError', () => {
  test('retries after 60 seconds by default', () => {
    expect(new TemporaryError('not yet').delay).toBe(60);
  });

  test('takes a delay in seconds', () => {
    expect(new TemporaryError('not yet', { delay: 5 }).delay).toBe(5);
  });

  test('allows a delay of 0 to retry at once', () => {
    expect(new TemporaryError('again', { delay: 0 }).delay).toBe(0);
  });

  test('clamps a negative delay to 0', () => {
    expect(new TemporaryError('again', { delay: -10 }).delay).toBe(0);
  });

  test('falls back to the default for a NaN delay', () => {
    expect(new TemporaryError('again', { delay: Number.NaN }).delay).toBe(60);
  });

  test('is an Error with its name and message', () => {
    const error = new TemporaryError('not yet');
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('TemporaryError');
    expect(error.message).toBe('not yet');
  });

  test('keeps the cause', () => {
    const cause = new Error('socket hang up');
    expect(new TemporaryError('not yet', { cause }).cause).toBe(cause);
  });

  test('is not a PermanentError', () => {
    expect(new TemporaryError('not yet')).not.toBeInstanceOf(PermanentError);
  });
});

describe('PermanentError', () => {
  test('is an Error with its name and message', () => {
    const error = new PermanentError('invalid spec');
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('PermanentError');
    expect(error.message).toBe('invalid spec');
  });

  test('HandlerRetriesError is a PermanentError with its own name', () => {
    const error = new HandlerRetriesError('used up 3 retries');
    expect(error).toBeInstanceOf(PermanentError);
    expect(error).toBeInstanceOf(HandlerRetriesError);
    expect(error.name).toBe('HandlerRetriesError');
  });

  test('HandlerTimeoutError is a PermanentError with its own name', () => {
    const error = new HandlerTimeoutError('ran past 600 s');
    expect(error).toBeInstanceOf(PermanentError);
    expect(error).toBeInstanceOf(HandlerTimeoutError);
    expect(error.name).toBe('HandlerTimeoutError');
  });

  test('the two subclasses are told apart', () => {
    expect(new HandlerRetriesError('x')).not.toBeInstanceOf(HandlerTimeoutError);
    expect(new HandlerTimeoutError('x')).not.toBeInstanceOf(HandlerRetriesError);
  });
});

describe('describeError', () => {
  test('gives the message of an Error', () => {
    expect(describeError(new Error('boom'))).toBe('boom');
    expect(describeError(new TemporaryError('not yet'))).toBe('not yet');
  });

  test('gives the name of an Error without a message', () => {
    expect(describeError(new TypeError())).toBe('TypeError');
    expect(describeError(new PermanentError(''))).toBe('PermanentError');
  });

  test('gives a thrown string as is', () => {
    expect(describeError('plain text')).toBe('plain text');
  });

  test('says when undefined was thrown', () => {
    expect(describeError(undefined)).toBe('undefined was thrown');
  });

  test('gives JSON for objects and other values', () => {
    expect(describeError({ code: 409, reason: 'Conflict' })).toBe(
      '{"code":409,"reason":"Conflict"}',
    );
    expect(describeError(null)).toBe('null');
    expect(describeError(42)).toBe('42');
    expect(describeError([1, 'a'])).toBe('[1,"a"]');
  });

  test('falls back to String() for objects that are not JSON', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(describeError(circular)).toBe('[object Object]');
    expect(describeError(10n)).toBe('10');
  });

  test('always gives a string, even for symbols and functions', () => {
    expect(describeError(Symbol('oops'))).toBe('Symbol(oops)');
    expect(typeof describeError(() => undefined)).toBe('string');
  });
});
