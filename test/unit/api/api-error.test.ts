import {
  ApiError,
  MAX_RETRY_AFTER_SECONDS,
  parseRetryAfter,
  retryDelayMs,
} from '../../../src/framework/api/api-error.js';
import { installFakeClock, uninstallFakeClock } from '../../support/fake-clock.js';

describe('parseRetryAfter', () => {
  afterEach(uninstallFakeClock);

  test('reads delta-seconds', () => {
    expect(parseRetryAfter('7')).toBe(7);
  });

  test('reads an HTTP date as the seconds until then', () => {
    const clock = installFakeClock({ now: '2026-01-01T00:00:00Z' });
    const inTenSeconds = new Date(clock.now() + 10_000).toUTCString();
    expect(parseRetryAfter(inTenSeconds)).toBe(10);
  });

  test('is undefined when absent or unreadable', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter(' ')).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
  });

  test('caps a server (or proxy) asking for more than 10 minutes, so no watch or retry is parked for days', () => {
    expect(parseRetryAfter('99999999999')).toBe(MAX_RETRY_AFTER_SECONDS);
    expect(parseRetryAfter(new Date(Date.now() + 40 * 86_400_000).toUTCString())).toBe(
      MAX_RETRY_AFTER_SECONDS,
    );
    expect(MAX_RETRY_AFTER_SECONDS).toBe(600);
  });

  test('reads a negative delay as 0', () => {
    expect(parseRetryAfter('-5')).toBe(0);
  });
});

describe('retryDelayMs', () => {
  test('waits at least what the server asked for', () => {
    expect(retryDelayMs(new ApiError(429, 'slow down', undefined, 5), 1_000)).toBe(5_000);
  });

  test('keeps the caller’s own backoff when it is longer, or when the server asked nothing', () => {
    expect(retryDelayMs(new ApiError(429, 'slow down', undefined, 1), 8_000)).toBe(8_000);
    expect(retryDelayMs(new Error('reset'), 2_000)).toBe(2_000);
  });
});
