import { ApiError } from '../../../src/framework/api/api-error.js';
import {
  afterRefusal,
  isRefusal,
  MAX_INVALID_WRITE_ATTEMPTS,
  refusalWarning,
  waitsForChange,
} from '../../../src/framework/processing/write-refusal.js';
import { widget } from '../../support/widget-objects.js';

const STATE = 'create\u0000new.0123abcd\u0000false\u0000{}';

describe('writes the API server refuses', () => {
  test('are the 400s and 422s, nothing else', () => {
    expect(isRefusal(new ApiError(422, 'invalid'))).toBe(true);
    expect(isRefusal(new ApiError(400, 'bad request'))).toBe(true);
    expect(isRefusal(new ApiError(409, 'conflict'))).toBe(false);
    expect(isRefusal(new Error('invalid'))).toBe(false);
  });

  test('a 422 is retried after 1 s, 2 s, 4 s, 8 s, then the object waits for a change', () => {
    let refused: ReturnType<typeof afterRefusal>['refused'] | undefined;
    const requeues: (number | undefined)[] = [];
    for (let i = 0; i < MAX_INVALID_WRITE_ATTEMPTS; i++) {
      const next = afterRefusal(refused, STATE, 422);
      refused = next.refused;
      requeues.push(next.requeueAfterMs);
    }

    expect(requeues).toEqual([1_000, 2_000, 4_000, 8_000, undefined]);
    expect(waitsForChange(refused, STATE)).toBe(true);
    expect(waitsForChange(refused, 'another state')).toBe(false);
  });

  test('a 400 is not retried: the object waits for a change at once', () => {
    const next = afterRefusal(undefined, STATE, 400);

    expect(next.requeueAfterMs).toBeUndefined();
    expect(waitsForChange(next.refused, STATE)).toBe(true);
  });

  test('a refusal in another state starts counting again', () => {
    const next = afterRefusal({ state: 'an older state', attempts: 3 }, STATE, 422);

    expect(next).toEqual({ refused: { state: STATE, attempts: 1 }, requeueAfterMs: 1_000 });
  });

  test('the Warning names the object and the status, and says what to fix', () => {
    const warning = refusalWarning(widget(), STATE, new ApiError(422, 'spec.size: Invalid value'));

    expect(warning.reason).toBe('WriteRefused');
    expect(warning.message).toMatch(
      /^the API server refused the framework's write for default\/w1 \(422\): .*spec\.size: Invalid value.*; fix what the message names/,
    );
  });
});
