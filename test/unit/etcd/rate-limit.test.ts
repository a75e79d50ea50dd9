import { RateLimiter } from '../../../src/handlers/etcd/rate-limit.js';
import { installFakeClock, uninstallFakeClock } from '../../support/fake-clock.js';

describe('the backup server limits each remote address', () => {
  afterEach(uninstallFakeClock);

  it('allows 10 requests at once, refuses the 11th, and allows one more after a tenth of a second', () => {
    const clock = installFakeClock({ now: 1_000_000 });
    const limiter = new RateLimiter(10, clock.now);
    const answers = Array.from({ length: 11 }, () => limiter.take('10.0.0.1'));
    expect(answers.filter(Boolean)).toHaveLength(10);
    expect(answers[10]).toBe(false);
    clock.advance(100);
    expect(limiter.take('10.0.0.1')).toBe(true);
    expect(limiter.take('10.0.0.1')).toBe(false);
  });

  it('one address over its rate does not limit another', () => {
    const limiter = new RateLimiter(10, () => 0);
    for (let i = 0; i < 20; i++) limiter.take('10.0.0.1');
    expect(limiter.take('10.0.0.2')).toBe(true);
  });
});
